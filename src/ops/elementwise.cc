#include "ops/elementwise.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

namespace jisu {

// The float operation order below follows PyTorch / Hugging Face (LlamaRMSNorm, SiLU,
// softmax, apply_rotary_pos_emb) so results agree to an ulp or two; reductions are done in
// double so they are at least as accurate as PyTorch's cascaded float sums.

void RmsNorm(const float* x, const float* weight, float eps, int64_t n, float* out) {
  assert(n > 0);
  // Eight independent partial sums: the same accuracy as one double sum, but no loop-carried
  // dependency on a single add.
  double part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) part[j] += static_cast<double>(x[i + j]) * x[i + j];
  }
  for (; i < n; ++i) part[0] += static_cast<double>(x[i]) * x[i];
  const double sum =
      ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  // HF: variance (float32), rsqrt(variance + eps), x * r, then weight * that.
  const float variance = static_cast<float>(sum / static_cast<double>(n));
  const float r = 1.0f / std::sqrt(variance + eps);
  for (int64_t k = 0; k < n; ++k) out[k] = weight[k] * (x[k] * r);
}

void GeluTanhMul(float* gate, const float* up, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = gate[i];
    const float inner = kSqrt2OverPi * (v + 0.044715f * v * v * v);
    gate[i] = 0.5f * v * (1.0f + std::tanh(inner)) * up[i];
  }
}

void SoftCap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

void SiluMul(float* gate, const float* up, int64_t n) {
  if (elementwise_internal::SiluMulAvx512(gate, up, n)) return;
  if (elementwise_internal::SiluMulAvx2(gate, up, n)) return;
  elementwise_internal::SiluMulPortable(gate, up, n);
}

void elementwise_internal::SiluMulPortable(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void Softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float max = x[0];
  for (int64_t i = 1; i < n; ++i) max = std::max(max, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  // As ATen: multiply by the reciprocal of the (float) sum.
  const float inv = 1.0f / static_cast<float>(sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void AddInPlace(float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

void RopeAngles(int64_t position, const float* inv_freq, int64_t half, float* cos_out,
                float* sin_out) {
  // HF computes the angle as a float32 product and takes cos/sin in float32; cos/sin of the
  // float angle evaluated in double and rounded is the correctly rounded float result.
  const float pos = static_cast<float>(position);
  for (int64_t p = 0; p < half; ++p) {
    const double angle = static_cast<double>(pos * inv_freq[p]);
    cos_out[p] = static_cast<float>(std::cos(angle));
    sin_out[p] = static_cast<float>(std::sin(angle));
  }
}

void ApplyRopeAngles(float* x, int64_t num_heads, int64_t head_dim, const float* cos,
                     const float* sin, RopeStyle style) {
  assert(head_dim % 2 == 0);
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < num_heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t i0 = style == RopeStyle::kHalfSplit ? i : 2 * i;
      const int64_t i1 = style == RopeStyle::kHalfSplit ? i + half : 2 * i + 1;
      const float a = v[i0];
      const float b = v[i1];
      // q * cos + rotate_half(q) * sin, rotate_half = (-x2, x1).
      v[i0] = a * cos[i] - b * sin[i];
      v[i1] = b * cos[i] + a * sin[i];
    }
  }
}

void ApplyRope(float* x, int64_t num_heads, int64_t head_dim, int64_t position,
               const float* inv_freq, RopeStyle style) {
  assert(head_dim % 2 == 0);
  const int64_t half = head_dim / 2;
  // Stack buffers: head_dim of real models is at most a few hundred.
  constexpr int64_t kMaxHalf = 512;
  float cos_buf[kMaxHalf];
  float sin_buf[kMaxHalf];
  if (half <= kMaxHalf) {
    RopeAngles(position, inv_freq, half, cos_buf, sin_buf);
    ApplyRopeAngles(x, num_heads, head_dim, cos_buf, sin_buf, style);
    return;
  }
  std::vector<float> cs(static_cast<size_t>(2 * half));
  RopeAngles(position, inv_freq, half, cs.data(), cs.data() + half);
  ApplyRopeAngles(x, num_heads, head_dim, cs.data(), cs.data() + half, style);
}

}  // namespace jisu
