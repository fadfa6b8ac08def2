// Portable integer K-quant dot kernels: the reference the AVX2 ones are tested against. Codes
// and scales come from quant_k.h's own unpacking (not the vector kernels' word tricks), the
// integer sums are exact, and the float scaling follows matmul_int_kquant.h's formulas.
#include <cstring>

#include "core/half.h"
#include "ops/matmul_int_kquant.h"
#include "ops/matmul_kernels.h"
#include "ops/quant_k.h"

namespace jisu::matmul_internal {
namespace {

inline float F16At(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return F16ToF32(h);
}

// Q4_K/Q5_K block -> codes q[256], 6-bit sc[8], m[8], d, dmin.
template <bool kQ5>
void DecodeK4(const uint8_t* blk, uint8_t q[kQK_K], int sc[8], int m[8], float* d, float* dmin) {
  *d = F16At(blk);
  *dmin = F16At(blk + 2);
  const uint8_t* scales = blk + 4;
  const uint8_t* qh = blk + 16;
  const uint8_t* qs = blk + (kQ5 ? 48 : 16);
  for (int j = 0; j < 8; ++j) {
    UnpackScaleMinK4(scales, j, &sc[j], &m[j]);
    for (int i = 0; i < 32; ++i) {
      const uint8_t byte = qs[32 * (j / 2) + i];
      int v = (j % 2 == 0) ? (byte & 15) : (byte >> 4);
      if constexpr (kQ5) v |= ((qh[i] >> j) & 1) << 4;
      q[32 * j + i] = static_cast<uint8_t>(v);
    }
  }
}

template <bool kQ5>
void DotK4(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a, int64_t t0,
           int num_tokens, float* y, int64_t y_stride) {
  constexpr size_t kBB = kQ5 ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  const int64_t nsb = a.cols / kQK_K;
  uint8_t q[kQK_K];
  int sc[8], m[8];
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
    float acc[kMaxDotTokens] = {};
    for (int64_t sb = 0; sb < nsb; ++sb) {
      float d, dmin;
      DecodeK4<kQ5>(row + sb * kBB, q, sc, m, &d, &dmin);
      for (int t = 0; t < num_tokens; ++t) {
        for (int j = 0; j < 8; ++j) {
          const int64_t b = sb * 8 + j;
          const int8_t* qa = a.Qs(t0 + t) + b * 32;
          int32_t isum = 0;
          for (int i = 0; i < 32; ++i) isum += static_cast<int32_t>(q[32 * j + i]) * qa[i];
          const float da = a.D(t0 + t)[b];
          acc[t] += d * da * static_cast<float>(sc[j] * isum) -
                    dmin * da * static_cast<float>(m[j] * a.Sum(t0 + t)[b]);
        }
      }
    }
    for (int t = 0; t < num_tokens; ++t) y[t * y_stride + r] = acc[t];
  }
}

// Q6_K block -> signed codes q - 32 (e[256]), int8 scales, d.
void DecodeQ6(const uint8_t* blk, int8_t e[kQK_K], int sc[16], float* d) {
  const uint8_t* ql = blk;
  const uint8_t* qh = blk + 128;
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 4; ++k) {
      for (int i = 0; i < 32; ++i) {
        const uint8_t lb = ql[64 * h + 32 * (k % 2) + i];
        const int lo = k < 2 ? (lb & 15) : (lb >> 4);
        const int hi = (qh[32 * h + i] >> (2 * k)) & 3;
        e[128 * h + 32 * k + i] = static_cast<int8_t>((lo | (hi << 4)) - 32);
      }
    }
  }
  for (int s = 0; s < 16; ++s) sc[s] = static_cast<int8_t>(blk[192 + s]);
  *d = F16At(blk + 208);
}

void DotQ6(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a, int64_t t0,
           int num_tokens, float* y, int64_t y_stride) {
  const int64_t nsb = a.cols / kQK_K;
  int8_t e[kQK_K];
  int sc[16];
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
    float acc[kMaxDotTokens] = {};
    for (int64_t sb = 0; sb < nsb; ++sb) {
      float d;
      DecodeQ6(row + sb * sizeof(BlockQ6_K), e, sc, &d);
      for (int t = 0; t < num_tokens; ++t) {
        for (int j = 0; j < 8; ++j) {
          const int64_t b = sb * 8 + j;
          const int8_t* qa = a.Qs(t0 + t) + b * 32;
          int32_t half[2] = {0, 0};
          for (int i = 0; i < 32; ++i) half[i / 16] += static_cast<int32_t>(e[32 * j + i]) * qa[i];
          const int32_t isum = sc[2 * j] * half[0] + sc[2 * j + 1] * half[1];
          acc[t] += d * a.D(t0 + t)[b] * static_cast<float>(isum);
        }
      }
    }
    for (int t = 0; t < num_tokens; ++t) y[t * y_stride + r] = acc[t];
  }
}

}  // namespace

void IntDotQ4_KScalar(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
                      int64_t t0, int num_tokens, float* y, int64_t y_stride) {
  DotK4<false>(w, row_bytes, num_rows, a, t0, num_tokens, y, y_stride);
}
void IntDotQ5_KScalar(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
                      int64_t t0, int num_tokens, float* y, int64_t y_stride) {
  DotK4<true>(w, row_bytes, num_rows, a, t0, num_tokens, y, y_stride);
}
void IntDotQ6_KScalar(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
                      int64_t t0, int num_tokens, float* y, int64_t y_stride) {
  DotQ6(w, row_bytes, num_rows, a, t0, num_tokens, y, y_stride);
}

}  // namespace jisu::matmul_internal
