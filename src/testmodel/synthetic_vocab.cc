#include "testmodel/synthetic_vocab.h"

#include <algorithm>

#include "format/gguf_writer.h"
#include "tokenizer/byte_level.h"

namespace jisu {
namespace {

constexpr int32_t kNormal = 1, kControl = 3;
constexpr int64_t kMaxSyntheticVocab = 258 + 65536 + int64_t{65536} * 256;

// Bytes in rough order of frequency in English text, so the first merges are useful ones.
std::vector<int> ByteRanks() {
  std::vector<int> order;
  const std::string common = " etaoinshrdlucmfwypvbgkjqxzETAOINSHRDLUCMFWYPVBGKJQXZ.,\n0123456789";
  for (char c : common) order.push_back(static_cast<unsigned char>(c));
  for (int b = 0; b < 256; ++b) {
    if (std::find(order.begin(), order.end(), b) == order.end()) order.push_back(b);
  }
  return order;
}

// Appends up to `count` tokens prev[i] + byte[j], enumerating (i, j) in growing squares
// (max(i, j) = 0, 1, 2, ...) so tokens made of earlier (commoner) parts come first.
void AppendLevel(const std::vector<std::string>& prev, const std::vector<std::string>& bytes,
                 int64_t count, SyntheticVocab& v, std::vector<std::string>* made) {
  const int64_t np = static_cast<int64_t>(prev.size()), nb = static_cast<int64_t>(bytes.size());
  auto add = [&](int64_t i, int64_t j) {
    v.tokens.push_back(prev[i] + bytes[j]);
    v.types.push_back(kNormal);
    v.merges.push_back(prev[i] + " " + bytes[j]);
    made->push_back(v.tokens.back());
    return static_cast<int64_t>(made->size()) < count;
  };
  for (int64_t k = 0; k < std::max(np, nb); ++k) {
    for (int64_t i = 0; i < std::min(k, np); ++i) {  // column k
      if (k < nb && !add(i, k)) return;
    }
    for (int64_t j = 0; j <= std::min(k, nb - 1); ++j) {  // row k
      if (k < np && !add(k, j)) return;
    }
  }
}

}  // namespace

Result<SyntheticVocab> MakeSyntheticVocab(int64_t vocab_size) {
  if (vocab_size < kMinSyntheticVocab || vocab_size > kMaxSyntheticVocab) {
    return Status::InvalidArgument("synthetic vocabulary size " + std::to_string(vocab_size) +
                                   " is outside [" + std::to_string(kMinSyntheticVocab) + ", " +
                                   std::to_string(kMaxSyntheticVocab) + "]");
  }
  SyntheticVocab v;
  v.tokens.reserve(static_cast<size_t>(vocab_size));
  v.types.reserve(static_cast<size_t>(vocab_size));
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(byte_level::Spell(static_cast<unsigned char>(b)));
    v.types.push_back(kNormal);
  }
  v.bos_id = 256;
  v.eos_id = 257;
  v.tokens.push_back("<|begin_of_text|>");
  v.tokens.push_back("<|end_of_text|>");
  v.types.push_back(kControl);
  v.types.push_back(kControl);
  std::vector<std::string> bytes;
  for (int b : ByteRanks()) bytes.push_back(byte_level::Spell(static_cast<unsigned char>(b)));
  std::vector<std::string> pairs, triples;
  const int64_t want_pairs = std::min<int64_t>(vocab_size - 258, 65536);
  if (want_pairs > 0) AppendLevel(bytes, bytes, want_pairs, v, &pairs);
  const int64_t want_triples = vocab_size - 258 - want_pairs;
  if (want_triples > 0) AppendLevel(pairs, bytes, want_triples, v, &triples);
  return v;
}

void AddSyntheticVocab(const SyntheticVocab& v, GgufWriter& w) {
  w.AddString("tokenizer.ggml.model", "gpt2");
  w.AddString("tokenizer.ggml.pre", "gpt-2");
  w.AddStringArray("tokenizer.ggml.tokens", v.tokens);
  w.AddI32Array("tokenizer.ggml.token_type", v.types);
  w.AddStringArray("tokenizer.ggml.merges", v.merges);
  w.AddU32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos_id));
  w.AddU32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos_id));
  w.AddBool("tokenizer.ggml.add_bos_token", true);
  w.AddBool("tokenizer.ggml.add_eos_token", false);
}

}  // namespace jisu
