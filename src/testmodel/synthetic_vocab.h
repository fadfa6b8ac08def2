// A synthetic byte-level BPE vocabulary of any size >= 258, for random-weight model files: the
// 256 byte tokens (GPT-2 byte spelling), a BOS and an EOS control token, then multi-byte tokens
// built by merges (byte pairs, then pair + byte), most common text bytes first, so text
// encodes to about two or three bytes per token and every id decodes to text. Written as a GGUF
// "gpt2" tokenizer that jisu and llama.cpp both load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jisu/status.h"

namespace jisu {

class GgufWriter;

struct SyntheticVocab {
  std::vector<std::string> tokens;  // byte-level spelled
  std::vector<int32_t> types;       // GGUF token types: 1 normal, 3 control
  std::vector<std::string> merges;  // "left right", highest priority first
  int32_t bos_id = 0;
  int32_t eos_id = 0;
};

constexpr int64_t kMinSyntheticVocab = 258;
// Up to 256 + 2 + 65536 * 257 tokens; InvalidArgument outside [258, that].
Result<SyntheticVocab> MakeSyntheticVocab(int64_t vocab_size);

// Writes tokenizer.ggml.* keys (model gpt2, pre gpt-2, add_bos true).
void AddSyntheticVocab(const SyntheticVocab& vocab, GgufWriter& writer);

}  // namespace jisu
