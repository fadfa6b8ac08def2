// The one Tokenizer implementation: added-token matching, normalizer, pre-tokenizer, BPE model,
// post-processor (a fixed prefix/suffix of special ids for a single sequence) and decoder. The
// loaders (hf_loader.cc, gguf_loader.cc) only fill a TokenizerSpec; everything that depends on
// where the tokenizer came from is resolved there.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace jisu {

// Vocabulary limits for untrusted input: ids are dense-ish and bounded, so nothing is sized by
// an unchecked number.
inline constexpr int64_t kMaxVocabSize = 1 << 24;
inline constexpr int64_t kMaxIdHoles = 1 << 16;

struct TokenizerSpec {
  std::vector<std::string> vocab;  // model vocabulary by id; "" is a hole
  std::vector<std::pair<std::string, std::string>> merges;
  BpeOptions bpe;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  Decoder decoder;
  std::vector<AddedToken> added;                // ids may lie past the model vocabulary
  std::vector<int32_t> prefix_ids, suffix_ids;  // what add_special adds around one sequence
  std::optional<int32_t> bos, eos;
  std::vector<int32_t> extra_stop_ids;
};

// Common end-of-turn markers (see Tokenizer::stop_ids).
bool IsEndOfTurnMarker(const std::string& token);

class BpeTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> Create(TokenizerSpec spec);

  std::vector<int32_t> Encode(std::string_view text, bool add_special) const override;
  std::string Decode(std::span<const int32_t> ids, bool skip_special) const override;
  std::string TokenBytes(int32_t id) const override;
  std::string DecodePiece(int32_t id, bool first) const override;
  int32_t vocab_size() const override { return vocab_size_; }
  std::optional<int32_t> TokenToId(std::string_view token) const override;
  std::string IdToToken(int32_t id) const override;
  bool IsSpecial(int32_t id) const override;
  std::optional<int32_t> bos_id() const override { return bos_; }
  std::optional<int32_t> eos_id() const override { return eos_; }
  std::vector<int32_t> stop_ids() const override { return stop_ids_; }
  void AddStopIds(std::span<const int32_t> ids) override;

 private:
  BpeTokenizer(BpeModel model, AddedTokenMatcher raw, AddedTokenMatcher normalized)
      : model_(std::move(model)),
        raw_matcher_(std::move(raw)),
        norm_matcher_(std::move(normalized)) {}
  const AddedToken* Added(int32_t id) const;
  void EncodeText(const Segment& segment, std::vector<int32_t>* out) const;

  BpeModel model_;
  AddedTokenMatcher raw_matcher_, norm_matcher_;
  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  Decoder decoder_;
  std::unordered_map<int32_t, AddedToken> added_by_id_;
  std::unordered_map<std::string, int32_t> added_by_content_;
  std::vector<int32_t> prefix_ids_, suffix_ids_;
  std::optional<int32_t> bos_, eos_;
  std::vector<int32_t> stop_ids_;
  int32_t vocab_size_ = 0;
};

}  // namespace jisu
