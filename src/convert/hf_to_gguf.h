// Converts a Hugging Face model folder to a GGUF file that llama.cpp-compatible readers (and
// jisu) load: architecture metadata, the tokenizer (byte-level BPE tokenizers as GGUF "gpt2"
// vocabularies with their pre-tokenizer name), the chat template, and all tensors in the
// requested type. Follows llama.cpp's conventions where they matter for compatibility:
// canonical tensor names, Q/K rows permuted for interleaved rotary pairs in llama/mistral
// files, norms and biases kept in F32, Llama-3 rope scaling written as rope_freqs.weight.
// Sensitive tensors stay in higher precision: with a 4-bit target the output head is Q8_0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "jisu/status.h"

namespace jisu {

struct ConvertOptions {
  DType type = DType::kF16;  // F32, F16, BF16, Q8_0, Q4_0, Q4_1
};

// Row order of llama.cpp's Q/K permutation: output row r takes input row order[r]. Rows are
// heads of head_dim rows; within a head, row 2i+s comes from row s*head_dim/2 + i.
std::vector<int64_t> InterleavedRopeRowOrder(int64_t rows, int64_t head_dim);

Status ConvertHfToGguf(const std::string& hf_dir, const std::string& out_path,
                       const ConvertOptions& options);

}  // namespace jisu
