// AVX2 + FMA + F16C K-quant kernels. A super-block's scale products are computed once into a
// small array, then the block is expanded a quarter (64 elements, eight ymm registers) at a
// time into exactly the floats DequantizeRow produces:
//   Q4_K/Q5_K: (ds * q) - dm in one FMA (ds * q is exact, so this equals the reference);
//   Q6_K: (q - 32) converted and multiplied by d*scale, as the reference.
#include "ops/matmul_kernels.h"
#include "ops/matmul_kernels_kquant.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#include "core/half.h"
#include "ops/quant_k.h"
#include "ops/simd_avx2.h"

namespace jisu::matmul_internal {
namespace {

using simd_avx2::HorizontalSum;

template <WeightKind K>
constexpr size_t kBlockBytes = K == kWQ4_K   ? sizeof(BlockQ4_K)
                               : K == kWQ5_K ? sizeof(BlockQ5_K)
                                             : sizeof(BlockQ6_K);

inline float LoadF16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return F16ToF32(h);
}

JISU_AVX2_INLINE __m256i LoadBytes8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// The block's scale products, computed once per super-block and broadcast from memory:
// Q4_K/Q5_K: s[j] = d * sc_j, s[8 + j] = -(dmin * m_j); Q6_K: s[i] = d * scales[i]. Same
// float products as the reference (negation is exact).
template <WeightKind K>
JISU_AVX2_INLINE void BlockScales(const uint8_t* blk, float s[16]) {
  if constexpr (K == kWQ4_K || K == kWQ5_K) {
    const float d = LoadF16(blk), dmin = LoadF16(blk + 2);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      UnpackScaleMinK4(blk + 4, j, &sc, &m);
      s[j] = d * static_cast<float>(sc);
      s[8 + j] = -(dmin * static_cast<float>(m));
    }
  } else {
    const __m256 d = _mm256_set1_ps(LoadF16(blk + 208));
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
    _mm256_storeu_ps(s, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)), d));
    _mm256_storeu_ps(
        s + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8))), d));
  }
}

// out[i] = elements 64*qtr + 8i .. +7 of the super-block at blk, given BlockScales' s.
template <WeightKind K, int qtr>
JISU_AVX2_INLINE void ExpandQuarter(const uint8_t* blk, const float* s, __m256 out[8]) {
  const __m256i low4 = _mm256_set1_epi32(15);
  if constexpr (K == kWQ4_K || K == kWQ5_K) {
    const uint8_t* qs = blk + (K == kWQ4_K ? 16 : 48) + 32 * qtr;
    const __m256 ds0 = _mm256_broadcast_ss(s + 2 * qtr);
    const __m256 ds1 = _mm256_broadcast_ss(s + 2 * qtr + 1);
    const __m256 ndm0 = _mm256_broadcast_ss(s + 8 + 2 * qtr);
    const __m256 ndm1 = _mm256_broadcast_ss(s + 8 + 2 * qtr + 1);
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m256i v = LoadBytes8(qs + 8 * p);
      __m256i q0 = _mm256_and_si256(v, low4);
      __m256i q1 = _mm256_srli_epi32(v, 4);
      if constexpr (K == kWQ5_K) {
        const __m256i hv = LoadBytes8(blk + 16 + 8 * p);
        const __m256i one = _mm256_set1_epi32(1);
        // Bits 2qtr and 2qtr+1 of qh are bit 4 of sub-blocks 2qtr and 2qtr+1.
        const __m256i h0 = _mm256_and_si256(_mm256_srli_epi32(hv, 2 * qtr), one);
        const __m256i h1 = _mm256_and_si256(_mm256_srli_epi32(hv, 2 * qtr + 1), one);
        q0 = _mm256_or_si256(q0, _mm256_slli_epi32(h0, 4));
        q1 = _mm256_or_si256(q1, _mm256_slli_epi32(h1, 4));
      }
      out[p] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q0), ds0, ndm0);
      out[4 + p] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q1), ds1, ndm1);
    }
  } else {
    constexpr int h = qtr / 2, kk = 2 * (qtr % 2);  // elements 128h + 32k + i, k = kk, kk + 1
    const uint8_t* ql = blk + 64 * h;
    const uint8_t* qhp = blk + 128 + 32 * h;
    const __m256i bias = _mm256_set1_epi32(32);
    const __m256i two = _mm256_set1_epi32(3);
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      __m256i l0 = LoadBytes8(ql + 8 * p);       // k = 0 (low nibble), 2 (high)
      __m256i l1 = LoadBytes8(ql + 32 + 8 * p);  // k = 1 (low nibble), 3 (high)
      const __m256i hv = LoadBytes8(qhp + 8 * p);
      if constexpr (kk == 2) {
        l0 = _mm256_srli_epi32(l0, 4);
        l1 = _mm256_srli_epi32(l1, 4);
      }
      const __m256i h0 = _mm256_and_si256(_mm256_srli_epi32(hv, 2 * kk), two);
      const __m256i h1 = _mm256_and_si256(_mm256_srli_epi32(hv, 2 * kk + 2), two);
      const __m256i q0 = _mm256_sub_epi32(
          _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_slli_epi32(h0, 4)), bias);
      const __m256i q1 = _mm256_sub_epi32(
          _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_slli_epi32(h1, 4)), bias);
      const int e0 = 128 * h + 32 * kk + 8 * p;  // first element of out[p]
      const int e1 = e0 + 32;                    // first element of out[4 + p]
      out[p] = _mm256_mul_ps(_mm256_cvtepi32_ps(q0), _mm256_broadcast_ss(s + e0 / 16));
      out[4 + p] = _mm256_mul_ps(_mm256_cvtepi32_ps(q1), _mm256_broadcast_ss(s + e1 / 16));
    }
  }
}

template <WeightKind K, int qtr, int NT>
JISU_AVX2_INLINE void DotQuarter(const uint8_t* blk, const float* s, const float* xb,
                                 int64_t x_stride, __m256 acc[NT][2]) {
  __m256 wv[8];
  ExpandQuarter<K, qtr>(blk, s, wv);
  for (int t = 0; t < NT; ++t) {
    const float* xt = xb + t * x_stride + 64 * qtr;
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      acc[t][i % 2] = _mm256_fmadd_ps(wv[i], _mm256_loadu_ps(xt + 8 * i), acc[t][i % 2]);
    }
  }
}

template <WeightKind K, int qtr>
JISU_AVX2_INLINE void StoreQuarter(const uint8_t* blk, const float* s, float* dst) {
  __m256 wv[8];
  ExpandQuarter<K, qtr>(blk, s, wv);
  for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + 64 * qtr + 8 * i, wv[i]);
}

template <WeightKind K, int NT>
JISU_AVX2 void DotRowsT(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows,
                        const float* x, int64_t x_stride, float* y, int64_t y_stride) {
  const int64_t nb = cols / kQK_K;
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
    __m256 acc[NT][2];
    for (int t = 0; t < NT; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = row + b * kBlockBytes<K>;
      alignas(32) float s[16];
      BlockScales<K>(blk, s);
      const float* xb = x + b * kQK_K;
      DotQuarter<K, 0, NT>(blk, s, xb, x_stride, acc);
      DotQuarter<K, 1, NT>(blk, s, xb, x_stride, acc);
      DotQuarter<K, 2, NT>(blk, s, xb, x_stride, acc);
      DotQuarter<K, 3, NT>(blk, s, xb, x_stride, acc);
    }
    for (int t = 0; t < NT; ++t) {
      y[t * y_stride + r] = HorizontalSum(_mm256_add_ps(acc[t][0], acc[t][1]));
    }
  }
}

template <WeightKind K>
JISU_AVX2 void DotRows(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows,
                       const float* x, int64_t x_stride, int num_tokens, float* y,
                       int64_t y_stride) {
  switch (num_tokens) {
    case 1:
      return DotRowsT<K, 1>(w, row_bytes, cols, num_rows, x, x_stride, y, y_stride);
    case 2:
      return DotRowsT<K, 2>(w, row_bytes, cols, num_rows, x, x_stride, y, y_stride);
    case 3:
      return DotRowsT<K, 3>(w, row_bytes, cols, num_rows, x, x_stride, y, y_stride);
    default:
      return DotRowsT<K, 4>(w, row_bytes, cols, num_rows, x, x_stride, y, y_stride);
  }
}

template <WeightKind K>
JISU_AVX2 void Dequant(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const uint8_t* blk = src + b * kBlockBytes<K>;
    alignas(32) float s[16];
    BlockScales<K>(blk, s);
    StoreQuarter<K, 0>(blk, s, dst + b * kQK_K);
    StoreQuarter<K, 1>(blk, s, dst + b * kQK_K);
    StoreQuarter<K, 2>(blk, s, dst + b * kQK_K);
    StoreQuarter<K, 3>(blk, s, dst + b * kQK_K);
  }
}

}  // namespace

#define JISU_KQUANT_EXPORT(Fmt)                                                               \
  void DotRows##Fmt##Avx2(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows, \
                          const float* x, int64_t x_stride, int num_tokens, float* y,         \
                          int64_t y_stride) {                                                 \
    DotRows<kW##Fmt>(w, row_bytes, cols, num_rows, x, x_stride, num_tokens, y, y_stride);     \
  }                                                                                           \
  void Dequant##Fmt##Avx2(const uint8_t* src, float* dst, int64_t n) {                        \
    Dequant<kW##Fmt>(src, dst, n);                                                            \
  }
JISU_KQUANT_EXPORT(Q4_K)
JISU_KQUANT_EXPORT(Q5_K)
JISU_KQUANT_EXPORT(Q6_K)
#undef JISU_KQUANT_EXPORT

}  // namespace jisu::matmul_internal

#endif
