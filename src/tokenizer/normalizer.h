// Normalizers of tokenizer.json that the supported model families use: NFC, Prepend, Replace
// (String or Regex pattern), Strip, and Sequence (flattened). Applied to the text between added
// tokens, before pre-tokenization.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "jisu/status.h"
#include "tokenizer/pipeline_types.h"

namespace jisu {

class Normalizer {
 public:
  // Parses the "normalizer" value (null means none). Unknown types: Unsupported.
  static Result<Normalizer> FromJson(const nlohmann::json& j);
  static Normalizer Nfc();

  bool empty() const { return steps_.empty(); }
  std::string Apply(std::string_view text) const;  // valid UTF-8 in and out

 private:
  struct Step {
    enum class Kind { kNfc, kPrepend, kReplace, kStrip };
    Kind kind = Kind::kNfc;
    std::string text;                  // Prepend: the prefix; Replace: the content
    Pattern pattern;                   // Replace
    bool left = false, right = false;  // Strip
  };
  Status Add(const nlohmann::json& j, int depth);
  std::vector<Step> steps_;
};

// Parses {"String": s} / {"Regex": r}.
Result<Pattern> ParsePattern(const nlohmann::json& j);
// Replaces every match of `pattern` in `text` by `content`.
std::string ReplaceAll(const Pattern& pattern, std::string_view text, std::string_view content);

}  // namespace jisu
