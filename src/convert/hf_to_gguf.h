// Converts a Hugging Face model folder to a GGUF file that llama.cpp-compatible readers (and
// jisu) load: architecture metadata, the tokenizer (byte-level BPE tokenizers as GGUF "gpt2"
// vocabularies with their pre-tokenizer name, SentencePiece BPE ones from tokenizer.model as
// "llama" vocabularies: convert/spm_vocab.h), the chat template, and all tensors in the
// requested type. Follows llama.cpp's conventions where they matter for compatibility:
// canonical tensor names, Q/K rows permuted for interleaved rotary pairs in llama/mistral
// files, norms and biases kept in F32, Llama-3 rope scaling written as rope_freqs.weight.
// Sensitive tensors stay in higher precision: with a 4-bit target the output head is Q8_0
// (Q6_K with a K-quant target). K-quant rows must be multiples of 256; other rows fall back
// (Q2_K/Q3_K -> Q4_0, Q4_K -> Q4_1, Q5_K/Q6_K -> Q8_0: the nearest type we have at no fewer
// bits).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "jisu/status.h"

namespace jisu {

// How the target type is applied to the weight matrices.
enum class QuantMix {
  kUniform,  // every matrix in `type` (except the output head, above)
  // llama.cpp's Q4_K_M recipe (type must be Q4_K): output head, and attn_v and ffn_down of
  // the layers UsesMoreBits selects, in Q6_K; every other matrix in Q4_K.
  kQ4_K_M,
};

struct ConvertOptions {
  DType type = DType::kF16;  // F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q2_K .. Q6_K
  QuantMix mix = QuantMix::kUniform;
};

// Q4_K_M's layer choice for attn_v/ffn_down: the first and last eighth of the layers and
// every third layer in between.
bool UsesMoreBits(int64_t layer, int64_t num_layers);

// Row order of llama.cpp's Q/K permutation: output row r takes input row order[r]. Rows are
// heads of head_dim rows; within a head, row 2i+s comes from row s*head_dim/2 + i.
std::vector<int64_t> InterleavedRopeRowOrder(int64_t rows, int64_t head_dim);

Status ConvertHfToGguf(const std::string& hf_dir, const std::string& out_path,
                       const ConvertOptions& options);

}  // namespace jisu
