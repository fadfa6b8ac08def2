// AVX-512 K-quant kernels. A 256-element super-block is expanded into 16 zmm registers of
// exactly the floats DequantizeRow produces, then multiplied with the activations; the GEMM
// path stores the same registers into its panel rows.
//   Q4_K: per sub-block a 16-entry table ds*q - dm (ds*q is exact, so one fused rounding
//         equals the reference's), looked up by nibble with vpermps.
//   Q5_K: the same with a 32-entry table (vpermt2ps), index = nibble | high bit << 4.
//   Q6_K: q - 32 converted to float and multiplied by d*scale, as the reference.
#include "ops/matmul_kernels.h"
#include "ops/matmul_kernels_kquant.h"

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "core/half.h"
#include "ops/quant_k.h"

#define JISU_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define JISU_AVX512_INLINE JISU_AVX512 inline __attribute__((always_inline))

namespace jisu::matmul_internal {
namespace {

template <WeightKind K>
constexpr size_t kBlockBytes = K == kWQ4_K   ? sizeof(BlockQ4_K)
                               : K == kWQ5_K ? sizeof(BlockQ5_K)
                                             : sizeof(BlockQ6_K);

inline float LoadF16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return F16ToF32(h);
}

JISU_AVX512_INLINE __m512i LoadBytes16(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Lanes 0..7: d * sc_j, lanes 8..15: -(dmin * m_j) for the eight sub-blocks of a Q4_K/Q5_K
// block (the same float products as the reference; negation is exact). Unpacks the 6-bit
// fields of scales[12] (layout in quant_k.h) with two lane permutes instead of scalar code.
JISU_AVX512_INLINE __m512 DScalesK4(const uint8_t* blk) {
  // s[i] in lane i (bytes 12..15 belong to the next field and are never selected).
  const __m512i s = LoadBytes16(blk + 4);
  // Low part: sc_j = s[j] & 63 (j < 4), s[j+4] & 15 (j >= 4); m_j = s[j+4] & 63 (j < 4),
  // s[j+4] >> 4 (j >= 4). High part (j >= 4): bits 6..7 of s[j-4] (sc) or s[j] (m) -> 4..5.
  const __m512i lo_idx = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11);
  const __m512i lo_shift = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4);
  const __m512i lo_mask =
      _mm512_setr_epi32(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 15, 15, 15, 15);
  const __m512i hi_idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 4, 5, 6, 7);
  const __m512i hi_mask =
      _mm512_setr_epi32(0, 0, 0, 0, 0x30, 0x30, 0x30, 0x30, 0, 0, 0, 0, 0x30, 0x30, 0x30, 0x30);
  const __m512i lo =
      _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(lo_idx, s), lo_shift), lo_mask);
  const __m512i hi =
      _mm512_and_si512(_mm512_srli_epi32(_mm512_permutexvar_epi32(hi_idx, s), 2), hi_mask);
  const float d = LoadF16(blk), dmin = LoadF16(blk + 2);
  const __m512 mul = _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(d), _mm512_set1_ps(-dmin));
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_or_si512(lo, hi)), mul);
}

// out[i] = elements 16i .. 16i+15 of the super-block at blk.
template <WeightKind K>
JISU_AVX512_INLINE void ExpandBlock(const uint8_t* blk, __m512 out[16]) {
  const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  if constexpr (K == kWQ4_K || K == kWQ5_K) {
    const __m512 dd = DScalesK4(blk);
    const uint8_t* qs = blk + (K == kWQ4_K ? 16 : 48);
    __m512i qh[2];
    if constexpr (K == kWQ5_K) {
      qh[0] = LoadBytes16(blk + 16);
      qh[1] = LoadBytes16(blk + 32);
    }
    const __m512i low4 = _mm512_set1_epi32(15);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m512 ds = _mm512_permutexvar_ps(_mm512_set1_epi32(j), dd);
      const __m512 ndm = _mm512_permutexvar_ps(_mm512_set1_epi32(8 + j), dd);
      const __m512 t0 = _mm512_fmadd_ps(iota, ds, ndm);
      __m512 t1;
      if constexpr (K == kWQ5_K) {
        t1 = _mm512_fmadd_ps(_mm512_add_ps(iota, _mm512_set1_ps(16.0f)), ds, ndm);
      }
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        const __m512i v = LoadBytes16(qs + 32 * (j / 2) + 16 * half);
        const __m512i nib = (j % 2) ? _mm512_srli_epi32(v, 4) : v;
        __m512 w;
        if constexpr (K == kWQ4_K) {
          w = _mm512_permutexvar_ps(nib, t0);  // uses index bits 0..3 only
        } else {
          // Bit j of qh moved to bit 4, nibble in bits 0..3 (vpermt2ps uses bits 0..4).
          const __m512i hb = _mm512_slli_epi32(_mm512_srli_epi32(qh[half], j), 4);
          const __m512i idx = _mm512_ternarylogic_epi32(low4, nib, hb, 0xCA);  // low4 ? nib : hb
          w = _mm512_permutex2var_ps(t0, idx, t1);
        }
        out[2 * j + half] = w;
      }
    }
  } else {
    const float d = LoadF16(blk + 208);
    const uint8_t* ql = blk;
    const uint8_t* qhp = blk + 128;
    // Lane s: d * scales[s], the reference's product.
    const __m512 dsv = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                                         reinterpret_cast<const __m128i*>(blk + 192)))),
                                     _mm512_set1_ps(d));
    const __m512i low4 = _mm512_set1_epi32(15);
    const __m512i six = _mm512_set1_epi32(63);
    const __m512i bias = _mm512_set1_epi32(32);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        const __m512i l0 = LoadBytes16(ql + 64 * h + 16 * half);
        const __m512i l1 = LoadBytes16(ql + 64 * h + 32 + 16 * half);
        const __m512i hv = LoadBytes16(qhp + 32 * h + 16 * half);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          const __m512i lo = k == 0   ? l0
                             : k == 1 ? l1
                             : k == 2 ? _mm512_srli_epi32(l0, 4)
                                      : _mm512_srli_epi32(l1, 4);
          // Bits 2k, 2k+1 of qh to bits 4, 5.
          const __m512i hi =
              2 * k <= 4 ? _mm512_slli_epi32(hv, 4 - 2 * k) : _mm512_srli_epi32(hv, 2 * k - 4);
          const __m512i q = _mm512_sub_epi32(
              _mm512_and_si512(_mm512_ternarylogic_epi32(low4, lo, hi, 0xCA), six), bias);
          const int e = 128 * h + 32 * k + 16 * half;
          const __m512 ds = _mm512_permutexvar_ps(_mm512_set1_epi32(e / 16), dsv);
          out[e / 16] = _mm512_mul_ps(_mm512_cvtepi32_ps(q), ds);
        }
      }
    }
  }
}

template <WeightKind K, int NT>
JISU_AVX512 void DotRowsT(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows,
                          const float* x, int64_t x_stride, float* y, int64_t y_stride) {
  const int64_t nb = cols / kQK_K;
  constexpr int kAcc = NT == 1 ? 4 : 2;  // independent FMA chains per token
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
    __m512 acc[NT][kAcc];
    for (int t = 0; t < NT; ++t) {
      for (int a = 0; a < kAcc; ++a) acc[t][a] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < nb; ++b) {
      __m512 wv[16];
      ExpandBlock<K>(row + b * kBlockBytes<K>, wv);
      for (int t = 0; t < NT; ++t) {
        const float* xt = x + t * x_stride + b * kQK_K;
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) {
          acc[t][i % kAcc] = _mm512_fmadd_ps(wv[i], _mm512_loadu_ps(xt + 16 * i), acc[t][i % kAcc]);
        }
      }
    }
    for (int t = 0; t < NT; ++t) {
      __m512 s = acc[t][0];
      for (int a = 1; a < kAcc; ++a) s = _mm512_add_ps(s, acc[t][a]);
      y[t * y_stride + r] = _mm512_reduce_add_ps(s);
    }
  }
}

template <WeightKind K>
JISU_AVX512 void DotRows(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows,
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
JISU_AVX512 void Dequant(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    __m512 wv[16];
    ExpandBlock<K>(src + b * kBlockBytes<K>, wv);
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + b * kQK_K + 16 * i, wv[i]);
  }
}

}  // namespace

#define JISU_KQUANT_EXPORT(Fmt)                                                                 \
  void DotRows##Fmt##Avx512(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows, \
                            const float* x, int64_t x_stride, int num_tokens, float* y,         \
                            int64_t y_stride) {                                                 \
    DotRows<kW##Fmt>(w, row_bytes, cols, num_rows, x, x_stride, num_tokens, y, y_stride);       \
  }                                                                                             \
  void Dequant##Fmt##Avx512(const uint8_t* src, float* dst, int64_t n) {                        \
    Dequant<kW##Fmt>(src, dst, n);                                                              \
  }
JISU_KQUANT_EXPORT(Q4_K)
JISU_KQUANT_EXPORT(Q5_K)
JISU_KQUANT_EXPORT(Q6_K)
#undef JISU_KQUANT_EXPORT

}  // namespace jisu::matmul_internal

#endif
