// Added tokens (special or not) recognized whole in the input text before the model runs, as
// tokenizers' AddedVocabulary does: leftmost-longest matching, the single_word / lstrip /
// rstrip options, and two passes: tokens with normalized == false match the raw text, the
// others match the normalized text (their content normalized the same way).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/regex.h"

namespace jisu {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool normalized = false;
  bool lstrip = false, rstrip = false, single_word = false;
};

// A part of the input: either an added token (id >= 0) or text for the normal pipeline.
struct Segment {
  std::string text;
  int32_t id = -1;
  bool at_start = false;  // begins at offset 0 of the original input
};

class AddedTokenMatcher {
 public:
  // Builds a matcher over `tokens` with the given contents (the normalized contents for the
  // second pass). Contents that are empty or not valid UTF-8 never match.
  AddedTokenMatcher(const std::vector<AddedToken>& tokens, std::vector<std::string> contents);
  AddedTokenMatcher(AddedTokenMatcher&&) = default;
  AddedTokenMatcher& operator=(AddedTokenMatcher&&) = default;

  bool empty() const { return contents_.empty(); }
  // Splits `text` (valid UTF-8) into segments; empty segments are dropped.
  void Split(const std::string& text, bool at_start, std::vector<Segment>* out) const;

 private:
  std::vector<AddedToken> tokens_;
  std::vector<std::string> contents_;
  // First byte -> indices into contents_, longest first.
  std::vector<std::vector<int32_t>> by_first_byte_;
  bool IsWordChar(const std::string& s, size_t pos) const;
  std::unique_ptr<Regex> word_char_;
};

}  // namespace jisu
