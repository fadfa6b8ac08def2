// Per-token layer operations other than matmul and attention. Plain functions over raw
// pointers; `n` is the row length. All in float32.
#pragma once

#include <cstdint>

namespace jisu {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i]   (out may alias x)
void RmsNorm(const float* x, const float* weight, float eps, int64_t n, float* out);

// gate[i] = silu(gate[i]) * up[i]   (SwiGLU), silu(v) = v / (1 + exp(-v))
void SiluMul(float* gate, const float* up, int64_t n);
namespace elementwise_internal {
// SiluMul on AVX-512 (vector exp, ~2 ulp; false where unavailable) and the portable loop.
bool SiluMulAvx512(float* gate, const float* up, int64_t n);
bool SiluMulAvx2(float* gate, const float* up, int64_t n);  // the same on AVX2
void SiluMulPortable(float* gate, const float* up, int64_t n);
}  // namespace elementwise_internal

// gate[i] = gelu_tanh(gate[i]) * up[i] (GeGLU, PyTorch's gelu(approximate="tanh")):
// gelu_tanh(v) = 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))
void GeluTanhMul(float* gate, const float* up, int64_t n);

// x[i] = cap * tanh(x[i] / cap)   (Gemma's logit soft-capping), cap > 0
void SoftCap(float* x, int64_t n, float cap);

// In-place softmax over n values; returns nothing. Stable (subtracts the max).
void Softmax(float* x, int64_t n);

// a[i] += b[i]
void AddInPlace(float* a, const float* b, int64_t n);

// Rotary position embedding applied in place to `num_heads` heads of `head_dim` values each
// (contiguous), with precomputed inverse frequencies inv_freq[head_dim/2].
// NeoX / Hugging Face style (kHalfSplit): pairs (i, i + head_dim/2).
// GPT-J / original Llama / GGUF-llama style (kInterleaved): pairs (2i, 2i+1).
enum class RopeStyle { kHalfSplit, kInterleaved };
void ApplyRope(float* x, int64_t num_heads, int64_t head_dim, int64_t position,
               const float* inv_freq, RopeStyle style);

// The same in two halves, so a forward pass takes the cos/sin of each position once for all
// layers (double-precision cos and sin per pair were 3.6% of a 32-sequence decode step when
// every layer recomputed them). RopeAngles fills cos_out/sin_out[head_dim / 2] for `position`;
// ApplyRopeAngles rotates with them. Together bit-identical to ApplyRope.
void RopeAngles(int64_t position, const float* inv_freq, int64_t half, float* cos_out,
                float* sin_out);
void ApplyRopeAngles(float* x, int64_t num_heads, int64_t head_dim, const float* cos,
                     const float* sin, RopeStyle style);

}  // namespace jisu
