// The CUDA backend's reading of a layer program (model/layer_program.h): the program's ops
// matched, in order, against the sequences the backend has kernels for, giving the list of
// launches one layer makes. Plain C++ (no device code), so the matching is tested without a GPU.
//
// Two lists come out of one matching: `ops` for any step size (products on cuBLASLt or the
// skinny GEMM, elementwise kernels between them), and `gemv_ops` for steps of a few tokens,
// where the fused GEMVs of gemv.cu take in their neighbours: a product's input norm, the q/k/v
// bias, rope and K/V write, the gated activation, and the next norm's input after a residual
// add. FuseForGemv rewrites sequences of `ops` by their shape alone, so any architecture whose
// layer has such a sequence gets the fused kernel there and the per-op kernels elsewhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jisu/status.h"
#include "model/layer_program.h"

namespace jisu::cuda {

enum class StepKind : uint8_t {
  kNormIn,         // xn = bf16(RMSNorm(x) * norm)
  kQkvProject,     // qkv = xn . [Wq; Wk; Wv]^T
  kQkvBias,        // qkv += [bq; bk; bv] (separate only when head norms follow the bias)
  kHeadNorm,       // each q and k head of qkv RMS-normed * q_norm / k_norm
  kRopeKv,         // (+ bias when fuse_bias) rope q and k; q * scale -> q; k, v -> the cache
  kAttention,      // attn = softmax(q . K^T over the layer's window) . V
  kOutProject,     // x += attn . Wo^T, or x += RMSNorm(attn . Wo^T) * post_norm
  kGateUpProject,  // gate_up = xn . [Wgate; Wup]^T
  kGatedAct,       // act = bf16(act(gate) * up)
  kDownProject,    // x += act . Wdown^T, or through post_norm as kOutProject
  // Fused GEMVs (gemv_ops only). A consumer with `fused_norm` reads u = bf16(x * norm) and the
  // partial sums of squares the step before it wrote, and applies the norm in its products;
  // without it, it reads xn as a kNormIn wrote it.
  kQkvRopeGemv,  // kQkvProject [+ bias] + kRopeKv
  kGateActGemv,  // kGateUpProject + kGatedAct (SiLU)
  kOutGemv,      // kOutProject without a post norm; `next_norm`: also u and sums for that norm
  kDownGemv,     // kDownProject, the same
};
const char* StepKindName(StepKind kind);

struct StepOp {
  StepKind kind;
  WeightId norm = WeightId::kCount;       // kNormIn: its weight; k*Project: the post norm
  Activation act = Activation::kSilu;     // kGatedAct
  bool fuse_bias = false;                 // kRopeKv, kQkvRopeGemv: add the q/k/v bias first
  bool fused_norm = false;                // *Gemv consumers: `norm` is applied from u and the sums
  WeightId next_norm = WeightId::kCount;  // kOutGemv / kDownGemv: the norm whose input they write
  bool next_layer = false;                // ... of the next layer's weights (its first op)
  bool operator==(const StepOp&) const = default;
};

struct LayerPlan {
  std::vector<StepOp> ops;       // one layer's launches, in order
  std::vector<StepOp> gemv_ops;  // the same layer for steps the fused GEMVs take (FuseForGemv)
  bool qkv_bias = false;
  bool head_norm = false;
};

// Matches `program.layer_ops`; Unsupported naming the first op (index and name) that no kernel
// sequence covers.
Result<LayerPlan> PlanLayer(const ModelProgram& program, const std::string& arch_name);

// The fused-GEMV form of one layer's `ops`. Layers repeat, so the op after the last is the
// first: a residual at the end of a layer writes the next layer's first norm input (the
// embedding does it for the first layer, and the last layer's writes nothing, the final norm
// reading x itself).
std::vector<StepOp> FuseForGemv(const std::vector<StepOp>& ops);

}  // namespace jisu::cuda
