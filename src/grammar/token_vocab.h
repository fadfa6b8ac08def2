// A model's vocabulary as the grammar matcher sees it: the bytes each token adds to the output,
// and those tokens sorted by their bytes, so tokens that share a prefix are neighbours and a walk
// over the sorted list with the common-prefix length of each neighbour (lcp) visits the byte
// trie of the vocabulary, each shared prefix once (the mask cache and the uncertain-token check
// are such walks).
//
// Excluded (never allowed by a grammar): special tokens (BOS, EOS, chat markers: their text is
// not output text), tokens with no bytes, ids the tokenizer does not have (a model's padded
// rows). EOS ids are allowed only when the grammar is complete (the matcher adds them). A
// constraint may name special tokens it writes as themselves (StructuredOutput::
// special_tokens, e.g. Mistral's [TOOL_CALLS]): WithSpecials gives the vocabulary that also
// holds those, by their text.
// SentencePiece drops the leading space of the first output token (Tokenizer::DecodePiece with
// first = true); tokens whose first-position bytes differ are listed in first_overrides().
// Immutable once built; shared by every grammar compiled for the model.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace jisu::grammar {

class TokenVocab {
 public:
  // Longer tokens are excluded (no real vocabulary has them; bounds walk depth).
  static constexpr size_t kMaxTokenBytes = 256;

  // `vocab_size`: the model's (logit rows); `eos_ids`: the ids that end generation.
  static std::shared_ptr<const TokenVocab> FromTokenizer(const Tokenizer& tokenizer,
                                                         int32_t vocab_size,
                                                         std::span<const int32_t> eos_ids);
  // Tokens given as byte strings (an empty string excludes the id); for tests and benches.
  // `specials`: excluded special tokens (id, text) that WithSpecials can bring in.
  static std::shared_ptr<const TokenVocab> FromBytes(
      std::vector<std::string> tokens, std::vector<int32_t> eos_ids,
      std::vector<std::pair<int32_t, std::string>> first_overrides = {},
      std::vector<std::pair<int32_t, std::string>> specials = {});
  // `base` plus the special tokens whose text is one of `names` (EOS ids never); `base` itself
  // when none of the names is such a token (their text is then matched by ordinary tokens).
  static std::shared_ptr<const TokenVocab> WithSpecials(
      const std::shared_ptr<const TokenVocab>& base, std::span<const std::string> names);

  int32_t size() const { return size_; }
  size_t mask_words() const { return (static_cast<size_t>(size_) + 31) / 32; }
  std::string_view bytes(int32_t id) const {
    return id >= 0 && id < size_ ? std::string_view(bytes_[id]) : std::string_view();
  }
  std::span<const int32_t> eos_ids() const { return eos_; }
  bool is_eos(int32_t id) const;
  std::span<const std::pair<int32_t, std::string>> first_overrides() const { return first_; }

  size_t num_sorted() const { return sorted_.size(); }
  int32_t sorted_id(size_t i) const { return sorted_[i]; }
  std::string_view sorted_bytes(size_t i) const { return bytes_[sorted_[i]]; }
  // Common prefix length of sorted tokens i - 1 and i (0 for i == 0).
  uint32_t lcp(size_t i) const { return lcp_[i]; }
  size_t max_token_bytes() const { return max_len_; }

 private:
  void Finish();

  int32_t size_ = 0;
  std::vector<std::string> bytes_;  // [size_]; "" = excluded
  std::vector<int32_t> sorted_;     // included ids by bytes
  std::vector<uint32_t> lcp_;
  std::vector<int32_t> eos_;
  std::vector<std::pair<int32_t, std::string>> first_;
  std::vector<std::pair<int32_t, std::string>> specials_;  // excluded special tokens' text
  size_t max_len_ = 0;
};

}  // namespace jisu::grammar
