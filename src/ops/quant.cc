#include "ops/quant.h"

#include <cassert>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "ops/quant_k.h"

namespace jisu {
namespace {

// The quantizers below repeat, operation for operation, the float32 arithmetic of
// gguf.quants (numpy) and ggml's reference C quantizers: same scale formula, same first-index
// tie-break for the block maximum, multiplication by the reciprocal scale (not division), and
// separate multiply and add roundings (this file is built without FMA, and ISO C++ mode keeps
// the compiler from contracting). Changing any of these changes bytes in rare ties.

// numpy's astype(uint8) of a truncated float, followed by clip(0, 15). Non-finite values
// (possible only for inputs containing inf/NaN) map to 0 as x86 numpy does, without UB.
inline uint8_t TruncToNibble(float v) {
  const float t = std::trunc(v);
  if (!(t >= 0.0f) || !(t < 256.0f)) return 0;
  const int q = static_cast<int>(t);
  return static_cast<uint8_t>(q > 15 ? 15 : q);
}

void QuantizeQ8_0(const float* x, BlockQ8_0* out, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQK) {
    float amax = 0.0f;
    for (int i = 0; i < kQK; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = F32ToF16(d);
    for (int i = 0; i < kQK; ++i) {
      // Round half away from zero (C roundf; gguf's np_roundf computes the same).
      float q = std::round(x[i] * id);
      if (!(q == q)) q = 0.0f;
      q = std::fmin(127.0f, std::fmax(-128.0f, q));
      out[b].qs[i] = static_cast<int8_t>(q);
    }
  }
}

void QuantizeQ4_0(const float* x, BlockQ4_0* out, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQK) {
    // Signed value of largest magnitude, first occurrence (numpy argmax).
    float amax = std::fabs(x[0]);
    float max = x[0];
    for (int i = 1; i < kQK; ++i) {
      if (amax < std::fabs(x[i])) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = F32ToF16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const float v0 = x[j] * id;
      const float v1 = x[j + kQK / 2] * id;
      const uint8_t q0 = TruncToNibble(v0 + 8.5f);
      const uint8_t q1 = TruncToNibble(v1 + 8.5f);
      out[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void QuantizeQ4_1(const float* x, BlockQ4_1* out, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQK) {
    float min = x[0];
    float max = x[0];
    for (int i = 1; i < kQK; ++i) {
      if (x[i] < min) min = x[i];
      if (x[i] > max) max = x[i];
    }
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = F32ToF16(d);
    out[b].m = F32ToF16(min);
    for (int j = 0; j < kQK / 2; ++j) {
      const float v0 = (x[j] - min) * id;
      const float v1 = (x[j + kQK / 2] - min) * id;
      const uint8_t q0 = TruncToNibble(v0 + 0.5f);
      const uint8_t q1 = TruncToNibble(v1 + 0.5f);
      out[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void DequantizeQ8_0(const BlockQ8_0* in, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK) {
    const float d = F16ToF32(in[b].d);
    for (int i = 0; i < kQK; ++i) y[i] = static_cast<float>(in[b].qs[i]) * d;
  }
}

void DequantizeQ4_0(const BlockQ4_0* in, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK) {
    const float d = F16ToF32(in[b].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>((in[b].qs[j] & 0x0f) - 8) * d;
      y[j + kQK / 2] = static_cast<float>((in[b].qs[j] >> 4) - 8) * d;
    }
  }
}

void DequantizeQ4_1(const BlockQ4_1* in, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK) {
    const float d = F16ToF32(in[b].d);
    const float m = F16ToF32(in[b].m);
    // d * q is exact (11-bit by 4-bit mantissas), so fused or not the sum rounds once.
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(in[b].qs[j] & 0x0f) * d + m;
      y[j + kQK / 2] = static_cast<float>(in[b].qs[j] >> 4) * d + m;
    }
  }
}

}  // namespace

bool IsSupportedWeightType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return true;
    default:
      return false;
  }
}

void WidenQ5_0ToQ8_0(const uint8_t* src, BlockQ8_0* dst, int64_t num_blocks) {
  constexpr int64_t kBytes = 22;  // f16 d, uint32 high bits, 16 bytes of low nibbles
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* in = src + b * kBytes;
    uint32_t qh = 0;
    std::memcpy(&dst[b].d, in, 2);
    std::memcpy(&qh, in + 2, 4);
    const uint8_t* qs = in + 6;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (qs[j] & 0x0F) | (((qh >> j) & 1) << 4);
      const int hi = (qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
      dst[b].qs[j] = static_cast<int8_t>(lo - 16);
      dst[b].qs[j + kQK / 2] = static_cast<int8_t>(hi - 16);
    }
  }
}

void DequantizeRow(DType dtype, const void* src, float* dst, int64_t n) {
  assert(IsSupportedWeightType(dtype));
  assert(n >= 0 && n % Traits(dtype).block_size == 0);
  switch (dtype) {
    case DType::kF32:
      if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = F16ToF32(h[i]);
      return;
    }
    case DType::kBF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToF32(h[i]);
      return;
    }
    case DType::kQ8_0:
      DequantizeQ8_0(static_cast<const BlockQ8_0*>(src), dst, n / kQK);
      return;
    case DType::kQ4_0:
      DequantizeQ4_0(static_cast<const BlockQ4_0*>(src), dst, n / kQK);
      return;
    case DType::kQ4_1:
      DequantizeQ4_1(static_cast<const BlockQ4_1*>(src), dst, n / kQK);
      return;
    case DType::kQ2_K:
      DequantizeQ2_K(static_cast<const BlockQ2_K*>(src), dst, n / kQK_K);
      return;
    case DType::kQ3_K:
      DequantizeQ3_K(static_cast<const BlockQ3_K*>(src), dst, n / kQK_K);
      return;
    case DType::kQ4_K:
      DequantizeQ4_K(static_cast<const BlockQ4_K*>(src), dst, n / kQK_K);
      return;
    case DType::kQ5_K:
      DequantizeQ5_K(static_cast<const BlockQ5_K*>(src), dst, n / kQK_K);
      return;
    case DType::kQ6_K:
      DequantizeQ6_K(static_cast<const BlockQ6_K*>(src), dst, n / kQK_K);
      return;
    default:
      assert(false && "unsupported weight type");
  }
}

void QuantizeRow(DType dtype, const float* src, void* dst, int64_t n) {
  assert(IsSupportedWeightType(dtype));
  assert(n >= 0 && n % Traits(dtype).block_size == 0);
  switch (dtype) {
    case DType::kF32:
      if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = F32ToF16(src[i]);
      return;
    }
    case DType::kBF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = F32ToBf16(src[i]);
      return;
    }
    case DType::kQ8_0:
      QuantizeQ8_0(src, static_cast<BlockQ8_0*>(dst), n / kQK);
      return;
    case DType::kQ4_0:
      QuantizeQ4_0(src, static_cast<BlockQ4_0*>(dst), n / kQK);
      return;
    case DType::kQ4_1:
      QuantizeQ4_1(src, static_cast<BlockQ4_1*>(dst), n / kQK);
      return;
    case DType::kQ2_K:
      QuantizeQ2_K(src, static_cast<BlockQ2_K*>(dst), n / kQK_K);
      return;
    case DType::kQ3_K:
      QuantizeQ3_K(src, static_cast<BlockQ3_K*>(dst), n / kQK_K);
      return;
    case DType::kQ4_K:
      QuantizeQ4_K(src, static_cast<BlockQ4_K*>(dst), n / kQK_K);
      return;
    case DType::kQ5_K:
      QuantizeQ5_K(src, static_cast<BlockQ5_K*>(dst), n / kQK_K);
      return;
    case DType::kQ6_K:
      QuantizeQ6_K(src, static_cast<BlockQ6_K*>(dst), n / kQK_K);
      return;
    default:
      assert(false && "unsupported weight type");
  }
}

}  // namespace jisu
