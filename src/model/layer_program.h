// The one description of a decoder that every backend executes: per layer, a short list of
// operations over named activation buffers and named weights, plus the few parameters that
// differ between layers (attention window, rope table). Architectures are written once, as data
// (src/model/arch/), and each backend interprets the list: the CPU Transformer op by op with its
// own fusions (per-token ops ride inside the next product's activation pass), the CUDA backend by
// recognizing the sequences its fused kernels implement. A backend that meets an op or a
// sequence it has no kernel for refuses the model at load time with the op's name, never
// silently computes something else.
//
// Conventions: activations are float rows, one per token of the step ([T, dim] with the dims of
// Buf below). Per-token ops read and write only their own token's rows, so a backend may run
// them on any subset of tokens, in any grouping, in the order listed. Norm weights are the
// final multipliers (Gemma's "1 + w" is folded in at load, as GGUF files store it).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "jisu/status.h"
#include "ops/elementwise.h"

namespace jisu {

struct ModelConfig;

// Activation buffers of one step. Dims: kX, kH, kOut hidden; kQ, kAttn q_dim; kK, kV kv_dim;
// kGate, kUp intermediate.
enum class Buf : uint8_t { kX, kH, kOut, kQ, kK, kV, kAttn, kGate, kUp, kCount };

// The weights a layer may have, with their canonical (GGUF) names in LayerWeightName.
enum class WeightId : uint8_t {
  kAttnNorm,      // [hidden]
  kWq,            // [q_dim, hidden]
  kWk,            // [kv_dim, hidden]
  kWv,            // [kv_dim, hidden]
  kBq,            // [q_dim]
  kBk,            // [kv_dim]
  kBv,            // [kv_dim]
  kQNorm,         // [head_dim]
  kKNorm,         // [head_dim]
  kWo,            // [hidden, q_dim]
  kPostAttnNorm,  // [hidden]
  kFfnNorm,       // [hidden]
  kWGate,         // [ffn, hidden]
  kWUp,           // [ffn, hidden]
  kWDown,         // [hidden, ffn]
  kPostFfnNorm,   // [hidden]
  kCount
};
const char* LayerWeightName(WeightId id);  // "attn_q.weight", ... (after "blk.N.")
// {rows, cols} of a layer weight under `config`; cols is 0 for vectors.
std::pair<int64_t, int64_t> LayerWeightShape(const ModelConfig& config, WeightId id);
bool IsNormWeight(WeightId id);

enum class OpCode : uint8_t {
  kNorm,       // per token: dst = RMSNorm(src) * weight            (dst may be src)
  kHeadNorm,   // per token, in place: each head of dst RMS-normed over head_dim * weight
  kAddBias,    // per token: dst += weight
  kRope,       // per token: rotate the heads of kQ and kK by the layer's rope table
  kGatedAct,   // per token: kGate = act(kGate) * kUp
  kAdd,        // per token: dst += src
  kLinear,     // dst_i = src . W_i^T for each target (up to 3, one shared pass over src)
  kAttention,  // writes each token's kK/kV rows into its KV slot, then
               // kAttn = softmax(scale * kQ . K^T over the layer's window) . V per head
};
const char* OpName(OpCode code);
bool IsPerTokenOp(OpCode code);

enum class Activation : uint8_t { kSilu, kGeluTanh };

struct LinearTarget {
  WeightId weight;
  Buf dst;
  bool operator==(const LinearTarget&) const = default;
};

struct Op {
  OpCode code;
  Buf src = Buf::kX;
  Buf dst = Buf::kX;
  WeightId weight = WeightId::kCount;      // kNorm, kHeadNorm, kAddBias
  std::vector<LinearTarget> targets = {};  // kLinear
  Activation act = Activation::kSilu;      // kGatedAct
  // kLinear: the product reads its input as float32 where a backend would otherwise quantize
  // activations (the CPU's int8 kernels). Set where that measurably costs accuracy.
  bool float_activations = false;
  bool operator==(const Op&) const = default;
};

// Rotary embedding of one kind of layer: inverse frequencies [head_dim / 2].
struct RopeTable {
  std::vector<float> inv_freq;
};

struct LayerParams {
  int64_t window = 0;  // attend to the last `window` positions (itself included); 0: all
  int rope = 0;        // index into ModelProgram::ropes
};

struct ModelProgram {
  float embed_scale = 1.0f;         // x = embedding row * embed_scale (Gemma: sqrt(hidden))
  std::vector<Op> layer_ops;        // every layer runs these, in order
  std::vector<LayerParams> layers;  // [num_layers]
  std::vector<RopeTable> ropes;     // at least one
  RopeStyle rope_style = RopeStyle::kHalfSplit;
  float attn_scale = 1.0f;           // multiplies q . k (1/sqrt(head_dim) for most models)
  float final_logit_softcap = 0.0f;  // 0: none; else logits = cap * tanh(logits / cap)
  float norm_eps = 1e-5f;

  // The weights the ops read, each once, in first-use order.
  std::vector<WeightId> UsedWeights() const;
  bool Uses(WeightId id) const;
  // Checks the ops' buffers, weights and targets against each other (a program built by an
  // architecture must pass; this guards hand-made ones in tests).
  Status Validate(int64_t num_layers) const;
};

// Builds the program of `config`'s architecture (src/model/arch/). `rope_freq_factors`, when
// given (GGUF rope_freqs.weight), divides the global rope table's frequencies.
ModelProgram BuildModelProgram(const ModelConfig& config,
                               const std::vector<float>* rope_freq_factors = nullptr);

}  // namespace jisu
