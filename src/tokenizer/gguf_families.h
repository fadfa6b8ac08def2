// The text pipeline a byte-level ("gpt2") GGUF vocabulary gets from its tokenizer.ggml.pre:
// the normalizer, pre-tokenizer and BPE ignore_merges of that family's tokenizer.json as the
// model's repository writes it (a GGUF keeps only the name). Unknown names get GPT-2's
// ByteLevel pre-tokenizer, as transformers' GGUF loader gives them.
#pragma once

#include <string_view>

#include "jisu/status.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"

namespace jisu {

struct GgufPipeline {
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  bool ignore_merges = false;
};

Result<GgufPipeline> ByteLevelPipelineFor(std::string_view pre);

}  // namespace jisu
