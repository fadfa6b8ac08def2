// The CUDA backend's reading of a layer program (model/layer_program.h): the program's ops
// matched, in order, against the sequences the backend has kernels for, giving the list of
// launches one layer makes. Plain C++ (no device code), so the matching is tested without a GPU.
//
// The fused GEMVs of gemv.cu implement one whole layer (norm + QKV + bias + rope + K/V write,
// attention, residual o, norm + SwiGLU, residual down) and are taken only when the program is
// exactly that layer (`fused_gemv_layer`); every other program runs on the per-op kernels below,
// at every step size.
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
};
const char* StepKindName(StepKind kind);

struct StepOp {
  StepKind kind;
  WeightId norm = WeightId::kCount;    // kNormIn: its weight; k*Project: the post norm
  Activation act = Activation::kSilu;  // kGatedAct
  bool fuse_bias = false;              // kRopeKv: add the q/k/v bias first
  bool operator==(const StepOp&) const = default;
};

struct LayerPlan {
  std::vector<StepOp> ops;  // one layer's launches, in order
  bool qkv_bias = false;
  bool head_norm = false;
  bool fused_gemv_layer = false;  // the program is the layer the fused GEMVs implement
};

// Matches `program.layer_ops`; Unsupported naming the first op (index and name) that no kernel
// sequence covers.
Result<LayerPlan> PlanLayer(const ModelProgram& program, const std::string& arch_name);

}  // namespace jisu::cuda
