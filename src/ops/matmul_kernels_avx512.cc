// AVX-512 (F/BW/VL/DQ + FMA + F16C) kernels. Every function carries the target attribute so
// the rest of the build stays baseline x86-64; only called after GetCpuFeatures().avx512.
// A 32-element chunk (one quant block) is two zmm registers.
#include "ops/cpu_features.h"
#include "ops/matmul_kernels.h"
#include "ops/matmul_kernels_kquant.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsic headers self-initialize "undefined" vectors, which its own
// -Wmaybe-uninitialized then reports at every use; the warning is a header artifact.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "ops/quant.h"

#define JISU_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define JISU_AVX512_INLINE JISU_AVX512 inline __attribute__((always_inline))

namespace jisu::matmul_internal {
namespace {

// The f16 at p converted and broadcast to all lanes, without a scalar round trip.
JISU_AVX512_INLINE __m512 BroadcastF16(const uint8_t* p) {
  int16_t h;
  std::memcpy(&h, p, 2);
  return _mm512_cvtph_ps(_mm256_set1_epi16(h));
}

// Expands chunk c (elements 32c .. 32c+31) of a row into lo (first 16) and hi (last 16).
template <WeightKind K>
JISU_AVX512_INLINE void LoadChunk(const uint8_t* row, int64_t c, __m512& lo, __m512& hi) {
  if constexpr (K == kWF32) {
    const float* p = reinterpret_cast<const float*>(row) + c * 32;
    lo = _mm512_loadu_ps(p);
    hi = _mm512_loadu_ps(p + 16);
  } else if constexpr (K == kWF16) {
    const uint8_t* p = row + c * 64;
    lo = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    hi = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)));
  } else if constexpr (K == kWBF16) {
    const uint8_t* p = row + c * 64;
    const __m512i a =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    const __m512i b =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)));
    lo = _mm512_castsi512_ps(_mm512_slli_epi32(a, 16));
    hi = _mm512_castsi512_ps(_mm512_slli_epi32(b, 16));
  } else if constexpr (K == kWQ8_0) {
    const uint8_t* blk = row + c * sizeof(BlockQ8_0);
    const __m512 d = BroadcastF16(blk);
    const __m128i* q = reinterpret_cast<const __m128i*>(blk + 2);
    lo = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(q))), d);
    hi = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(q + 1))), d);
  } else {
    constexpr bool kQ41 = K == kWQ4_1;
    const uint8_t* blk = row + c * (kQ41 ? sizeof(BlockQ4_1) : sizeof(BlockQ4_0));
    // The 16 possible weights of this block, then a lane permute per half: vpermps reads only
    // the low 4 bits of each index, so the low nibbles need no masking. Table entries are the
    // reference values: Q4_0 d * (q - 8) (exact), Q4_1 d * q + m (exact product, one rounding).
    __m512 table;
    if constexpr (kQ41) {
      const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      // d and m are adjacent f16s: broadcast the pair, convert once, split even/odd lanes.
      int32_t dm;
      std::memcpy(&dm, blk, 4);
      const __m512 pairs = _mm512_cvtph_ps(_mm256_set1_epi32(dm));
      table = _mm512_fmadd_ps(iota, _mm512_moveldup_ps(pairs), _mm512_movehdup_ps(pairs));
    } else {
      const __m512 iota = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
      table = _mm512_mul_ps(iota, BroadcastF16(blk));
    }
    const __m512i v = _mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + (kQ41 ? 4 : 2))));
    lo = _mm512_permutexvar_ps(v, table);
    hi = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), table);
  }
}

// Elements [start, start + n) of a float-type row, n < 32, zero beyond n.
template <WeightKind K>
JISU_AVX512_INLINE void LoadTail(const uint8_t* row, int64_t start, int n, __m512& lo, __m512& hi) {
  const __mmask16 mlo = static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << n) - 1);
  const __mmask16 mhi = static_cast<__mmask16>(n <= 16 ? 0 : (1u << (n - 16)) - 1);
  if constexpr (K == kWF32) {
    const float* p = reinterpret_cast<const float*>(row) + start;
    lo = _mm512_maskz_loadu_ps(mlo, p);
    hi = _mm512_maskz_loadu_ps(mhi, p + 16);
  } else {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(row) + start;
    const __m256i a = _mm256_maskz_loadu_epi16(mlo, p);
    const __m256i b = _mm256_maskz_loadu_epi16(mhi, p + 16);
    if constexpr (K == kWF16) {
      lo = _mm512_cvtph_ps(a);
      hi = _mm512_cvtph_ps(b);
    } else {
      lo = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(a), 16));
      hi = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
    }
  }
}

template <WeightKind K>
constexpr bool kIsFloatKind = K == kWF32 || K == kWF16 || K == kWBF16;

// R rows (sharing each activation load) x NT tokens.
template <WeightKind K, int NT, int R>
JISU_AVX512_INLINE void DotRowGroup(const uint8_t* row0, size_t row_bytes, int64_t chunks, int tail,
                                    const float* x, int64_t x_stride, float* y, int64_t y_stride) {
  __m512 acc0[R][NT], acc1[R][NT];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) acc0[r][t] = acc1[r][t] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < chunks; ++c) {
    __m512 lo[R], hi[R];
    for (int r = 0; r < R; ++r) LoadChunk<K>(row0 + r * row_bytes, c, lo[r], hi[r]);
    for (int t = 0; t < NT; ++t) {
      const float* xt = x + t * x_stride + c * 32;
      const __m512 x0 = _mm512_loadu_ps(xt);
      const __m512 x1 = _mm512_loadu_ps(xt + 16);
      for (int r = 0; r < R; ++r) {
        acc0[r][t] = _mm512_fmadd_ps(lo[r], x0, acc0[r][t]);
        acc1[r][t] = _mm512_fmadd_ps(hi[r], x1, acc1[r][t]);
      }
    }
  }
  if constexpr (kIsFloatKind<K>) {
    if (tail > 0) {
      const __mmask16 mlo = static_cast<__mmask16>(tail >= 16 ? 0xffff : (1u << tail) - 1);
      const __mmask16 mhi = static_cast<__mmask16>(tail <= 16 ? 0 : (1u << (tail - 16)) - 1);
      for (int r = 0; r < R; ++r) {
        __m512 lo, hi;
        LoadTail<K>(row0 + r * row_bytes, chunks * 32, tail, lo, hi);
        for (int t = 0; t < NT; ++t) {
          const float* xt = x + t * x_stride + chunks * 32;
          acc0[r][t] = _mm512_fmadd_ps(lo, _mm512_maskz_loadu_ps(mlo, xt), acc0[r][t]);
          acc1[r][t] = _mm512_fmadd_ps(hi, _mm512_maskz_loadu_ps(mhi, xt + 16), acc1[r][t]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) {
      y[t * y_stride + r] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[r][t], acc1[r][t]));
    }
  }
}

template <WeightKind K, int NT>
JISU_AVX512 void DotRowsT(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows,
                          const float* x, int64_t x_stride, float* y, int64_t y_stride) {
  const int64_t chunks = cols / 32;
  const int tail = static_cast<int>(cols - chunks * 32);
  int64_t r = 0;
  // One token (decode) on AMD reads one row at a time, a single sequential stream: on Zen 4
  // two rows per pass ran F16 decode of the TinyLlama-1.1B shape at 5 tok/s on one thread, one
  // row at 9. On Sapphire Rapids one row was 10-20% slower than two (4.1 -> 3.5 tok/s), so
  // other CPUs keep the pair (bench/results/2026-12-02-cpu-decode-zen4.md). With more tokens a
  // weight load serves several tokens and the pair stays everywhere.
  static const bool one_row_decode = GetCpuFeatures().amd;
  if (NT > 1 || !one_row_decode) {
    for (; r + 2 <= num_rows; r += 2) {
      DotRowGroup<K, NT, 2>(w + static_cast<size_t>(r) * row_bytes, row_bytes, chunks, tail, x,
                            x_stride, y + r, y_stride);
    }
  }
  for (; r < num_rows; ++r) {
    DotRowGroup<K, NT, 1>(w + static_cast<size_t>(r) * row_bytes, row_bytes, chunks, tail, x,
                          x_stride, y + r, y_stride);
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
  const int64_t chunks = n / 32;
  for (int64_t c = 0; c < chunks; ++c) {
    __m512 lo, hi;
    LoadChunk<K>(src, c, lo, hi);
    _mm512_storeu_ps(dst + c * 32, lo);
    _mm512_storeu_ps(dst + c * 32 + 16, hi);
  }
  if constexpr (kIsFloatKind<K>) {
    const int tail = static_cast<int>(n - chunks * 32);
    if (tail > 0) {
      __m512 lo, hi;
      LoadTail<K>(src, chunks * 32, tail, lo, hi);
      const __mmask16 mlo = static_cast<__mmask16>(tail >= 16 ? 0xffff : (1u << tail) - 1);
      const __mmask16 mhi = static_cast<__mmask16>(tail <= 16 ? 0 : (1u << (tail - 16)) - 1);
      _mm512_mask_storeu_ps(dst + chunks * 32, mlo, lo);
      _mm512_mask_storeu_ps(dst + chunks * 32 + 16, mhi, hi);
    }
  }
}

// 12 tokens x 32 output rows: 24 accumulators + 2 weight vectors, activations broadcast from
// memory.
constexpr int kMr = 12;
constexpr int kNr = 32;

JISU_AVX512 void Gemm(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                      bool accumulate) {
  __m512 acc0[kMr], acc1[kMr];
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k, a += kMr, b += kNr) {
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc0[i] = _mm512_fmadd_ps(ai, b0, acc0[i]);
      acc1[i] = _mm512_fmadd_ps(ai, b1, acc1[i]);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) {
    float* ci = c + i * ldc;
    if (accumulate) {
      acc0[i] = _mm512_add_ps(acc0[i], _mm512_loadu_ps(ci));
      acc1[i] = _mm512_add_ps(acc1[i], _mm512_loadu_ps(ci + 16));
    }
    _mm512_storeu_ps(ci, acc0[i]);
    _mm512_storeu_ps(ci + 16, acc1[i]);
  }
}

// In-register 16 x 16 transpose: r[i] holds row i; afterwards r[j] holds column j.
JISU_AVX512_INLINE void Transpose16x16(__m512 r[16]) {
  __m512 a[16], b[16];
  for (int i = 0; i < 8; ++i) {  // 32-bit interleave of row pairs
    a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // 64-bit interleave: b[4i + e] = element e of rows 4i..4i+3
    const __m512d a0 = _mm512_castps_pd(a[4 * i]), a1 = _mm512_castps_pd(a[4 * i + 1]);
    const __m512d a2 = _mm512_castps_pd(a[4 * i + 2]), a3 = _mm512_castps_pd(a[4 * i + 3]);
    b[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
    b[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
    b[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
    b[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
  }
  for (int e = 0; e < 4; ++e) {  // gather 128-bit chunk c of the four row groups: column 4c+e
    const __m512 p0 = _mm512_shuffle_f32x4(b[e], b[4 + e], 0x88);
    const __m512 p1 = _mm512_shuffle_f32x4(b[e], b[4 + e], 0xdd);
    const __m512 q0 = _mm512_shuffle_f32x4(b[8 + e], b[12 + e], 0x88);
    const __m512 q1 = _mm512_shuffle_f32x4(b[8 + e], b[12 + e], 0xdd);
    r[e] = _mm512_shuffle_f32x4(p0, q0, 0x88);
    r[8 + e] = _mm512_shuffle_f32x4(p0, q0, 0xdd);
    r[4 + e] = _mm512_shuffle_f32x4(p1, q1, 0x88);
    r[12 + e] = _mm512_shuffle_f32x4(p1, q1, 0xdd);
  }
}

JISU_AVX512 void TransposePanel(const float* rows, int64_t kc, float* panel) {
  int64_t k0 = 0;
  for (; k0 + 16 <= kc; k0 += 16) {
    for (int r0 = 0; r0 < kNr; r0 += 16) {
      __m512 v[16];
      for (int i = 0; i < 16; ++i) v[i] = _mm512_loadu_ps(rows + (r0 + i) * kc + k0);
      Transpose16x16(v);
      for (int j = 0; j < 16; ++j) _mm512_store_ps(panel + (k0 + j) * kNr + r0, v[j]);
    }
  }
  for (; k0 < kc; ++k0) {
    for (int r = 0; r < kNr; ++r) panel[k0 * kNr + r] = rows[r * kc + k0];
  }
}

constexpr KernelSet kAvx512 = {
    Isa::kAvx512,
    {DotRows<kWF32>, DotRows<kWF16>, DotRows<kWBF16>, DotRows<kWQ8_0>, DotRows<kWQ4_0>,
     DotRows<kWQ4_1>, DotRowsQ4_KAvx512, DotRowsQ5_KAvx512, DotRowsQ6_KAvx512, DotRowsQ2_KScalar,
     DotRowsQ3_KScalar},
    {Dequant<kWF32>, Dequant<kWF16>, Dequant<kWBF16>, Dequant<kWQ8_0>, Dequant<kWQ4_0>,
     Dequant<kWQ4_1>, DequantQ4_KAvx512, DequantQ5_KAvx512, DequantQ6_KAvx512, DequantQ2_KScalar,
     DequantQ3_KScalar},
    kMr,
    kNr,
    Gemm,
    TransposePanel,
};

}  // namespace

const KernelSet* Avx512KernelSet() { return &kAvx512; }

}  // namespace jisu::matmul_internal

#else  // not x86-64

namespace jisu::matmul_internal {
const KernelSet* Avx512KernelSet() { return nullptr; }
}  // namespace jisu::matmul_internal

#endif
