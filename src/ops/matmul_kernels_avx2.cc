// AVX2 + FMA + F16C kernels. Every function carries the target attribute so the rest of the
// build stays baseline x86-64; only called after GetCpuFeatures().avx2. A 32-element chunk
// (one quant block) is four ymm registers.
#include "ops/matmul_kernels.h"
#include "ops/matmul_kernels_kquant.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#include "core/half.h"
#include "ops/quant.h"
#include "ops/simd_avx2.h"

namespace jisu::matmul_internal {
namespace {

using simd_avx2::HorizontalSum;

JISU_AVX2_INLINE float LoadF16Scalar(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Expands chunk c (elements 32c .. 32c+31) of a row into v[0..3] (8 elements each, in order).
template <WeightKind K>
JISU_AVX2_INLINE void LoadChunk(const uint8_t* row, int64_t c, __m256 v[4]) {
  if constexpr (K == kWF32) {
    const float* p = reinterpret_cast<const float*>(row) + c * 32;
    for (int j = 0; j < 4; ++j) v[j] = _mm256_loadu_ps(p + 8 * j);
  } else if constexpr (K == kWF16) {
    const __m128i* p = reinterpret_cast<const __m128i*>(row + c * 64);
    for (int j = 0; j < 4; ++j) v[j] = _mm256_cvtph_ps(_mm_loadu_si128(p + j));
  } else if constexpr (K == kWBF16) {
    const __m128i* p = reinterpret_cast<const __m128i*>(row + c * 64);
    for (int j = 0; j < 4; ++j) {
      v[j] =
          _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(p + j)), 16));
    }
  } else if constexpr (K == kWQ8_0) {
    const uint8_t* blk = row + c * sizeof(BlockQ8_0);
    const __m256 d = _mm256_set1_ps(LoadF16Scalar(blk));
    for (int j = 0; j < 4; ++j) {
      const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + 8 * j));
      v[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d);
    }
  } else {
    constexpr bool kQ41 = K == kWQ4_1;
    const uint8_t* blk = row + c * (kQ41 ? sizeof(BlockQ4_1) : sizeof(BlockQ4_0));
    const float df = LoadF16Scalar(blk);
    const __m256 d = _mm256_set1_ps(df);
    // Q4_0: d*q - 8d (= d*(q-8) exactly); Q4_1: d*q + m, rounded once as the reference.
    const __m256 off = _mm256_set1_ps(kQ41 ? LoadF16Scalar(blk + 2) : -8.0f * df);
    const uint8_t* qs = blk + (kQ41 ? 4 : 2);
    const __m256i a = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs)));
    const __m256i b =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8)));
    const __m256i mask = _mm256_set1_epi32(0x0f);
    v[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(a, mask)), d, off);
    v[1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(b, mask)), d, off);
    v[2] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(a, 4)), d, off);
    v[3] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(b, 4)), d, off);
  }
}

template <WeightKind K>
constexpr bool kIsFloatKind = K == kWF32 || K == kWF16 || K == kWBF16;

// Element i of a float-type row.
template <WeightKind K>
JISU_AVX2_INLINE float LoadOne(const uint8_t* row, int64_t i) {
  if constexpr (K == kWF32) {
    float v;
    std::memcpy(&v, row + i * 4, 4);
    return v;
  } else {
    uint16_t h;
    std::memcpy(&h, row + i * 2, 2);
    return K == kWF16 ? _cvtsh_ss(h) : Bf16ToF32(h);
  }
}

template <WeightKind K, int NT>
JISU_AVX2 void DotRowsT(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows,
                        const float* x, int64_t x_stride, float* y, int64_t y_stride) {
  const int64_t chunks = cols / 32;
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
    __m256 acc0[NT], acc1[NT];
    for (int t = 0; t < NT; ++t) acc0[t] = acc1[t] = _mm256_setzero_ps();
    for (int64_t c = 0; c < chunks; ++c) {
      __m256 v[4];
      LoadChunk<K>(row, c, v);
      for (int t = 0; t < NT; ++t) {
        const float* xt = x + t * x_stride + c * 32;
        acc0[t] = _mm256_fmadd_ps(v[0], _mm256_loadu_ps(xt), acc0[t]);
        acc1[t] = _mm256_fmadd_ps(v[1], _mm256_loadu_ps(xt + 8), acc1[t]);
        acc0[t] = _mm256_fmadd_ps(v[2], _mm256_loadu_ps(xt + 16), acc0[t]);
        acc1[t] = _mm256_fmadd_ps(v[3], _mm256_loadu_ps(xt + 24), acc1[t]);
      }
    }
    for (int t = 0; t < NT; ++t) {
      float s = HorizontalSum(_mm256_add_ps(acc0[t], acc1[t]));
      if constexpr (kIsFloatKind<K>) {
        for (int64_t i = chunks * 32; i < cols; ++i) s += LoadOne<K>(row, i) * x[t * x_stride + i];
      }
      y[t * y_stride + r] = s;
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
  const int64_t chunks = n / 32;
  for (int64_t c = 0; c < chunks; ++c) {
    __m256 v[4];
    LoadChunk<K>(src, c, v);
    for (int j = 0; j < 4; ++j) _mm256_storeu_ps(dst + c * 32 + 8 * j, v[j]);
  }
  if constexpr (kIsFloatKind<K>) {
    for (int64_t i = chunks * 32; i < n; ++i) dst[i] = LoadOne<K>(src, i);
  }
}

// 4 tokens x 24 output rows: 12 accumulators + 3 weight vectors + 1 broadcast (all 16 ymm).
// On Zen 3 the broadcasts limit the loop: 6x16 (6 broadcasts per 12 FMAs) ran at 70 GFLOP/s
// per core in a stand-alone loop, 4x24 (4 per 12) at 87, FMA peak 92.
constexpr int kMr = 4;
constexpr int kNr = 24;

JISU_AVX2 void Gemm(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                    bool accumulate) {
  __m256 acc0[kMr], acc1[kMr], acc2[kMr];
#pragma GCC unroll 4
  for (int i = 0; i < kMr; ++i) acc0[i] = acc1[i] = acc2[i] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k, a += kMr, b += kNr) {
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
    const __m256 b2 = _mm256_load_ps(b + 16);
#pragma GCC unroll 4
    for (int i = 0; i < kMr; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
      acc0[i] = _mm256_fmadd_ps(ai, b0, acc0[i]);
      acc1[i] = _mm256_fmadd_ps(ai, b1, acc1[i]);
      acc2[i] = _mm256_fmadd_ps(ai, b2, acc2[i]);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < kMr; ++i) {
    float* ci = c + i * ldc;
    if (accumulate) {
      acc0[i] = _mm256_add_ps(acc0[i], _mm256_loadu_ps(ci));
      acc1[i] = _mm256_add_ps(acc1[i], _mm256_loadu_ps(ci + 8));
      acc2[i] = _mm256_add_ps(acc2[i], _mm256_loadu_ps(ci + 16));
    }
    _mm256_storeu_ps(ci, acc0[i]);
    _mm256_storeu_ps(ci + 8, acc1[i]);
    _mm256_storeu_ps(ci + 16, acc2[i]);
  }
}

// In-register transpose of 8 rows of 8: afterwards r[j] holds column j.
JISU_AVX2_INLINE void Transpose8x8(__m256 r[8]) {
  __m256 a[8], b[8];
  for (int i = 0; i < 4; ++i) {  // 32-bit interleave of row pairs
    a[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {  // 64-bit interleave: b[4i + e] = element e of rows 4i..4i+3
    b[4 * i] = _mm256_shuffle_ps(a[4 * i], a[4 * i + 2], 0x44);
    b[4 * i + 1] = _mm256_shuffle_ps(a[4 * i], a[4 * i + 2], 0xee);
    b[4 * i + 2] = _mm256_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0x44);
    b[4 * i + 3] = _mm256_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0xee);
  }
  for (int e = 0; e < 4; ++e) {  // 128-bit halves: columns e (low lanes) and 4 + e (high)
    r[e] = _mm256_permute2f128_ps(b[e], b[4 + e], 0x20);
    r[4 + e] = _mm256_permute2f128_ps(b[e], b[4 + e], 0x31);
  }
}

// The driver's portable transpose loop was 6% of a 1-thread F16 pp512 (perf, Zen 3): one
// strided scalar read per weight element, done once per task and slice.
JISU_AVX2 void TransposePanel(const float* rows, int64_t kc, float* panel) {
  int64_t k0 = 0;
  for (; k0 + 8 <= kc; k0 += 8) {
    for (int r0 = 0; r0 < kNr; r0 += 8) {
      __m256 v[8];
      for (int i = 0; i < 8; ++i) v[i] = _mm256_loadu_ps(rows + (r0 + i) * kc + k0);
      Transpose8x8(v);
      for (int j = 0; j < 8; ++j) _mm256_store_ps(panel + (k0 + j) * kNr + r0, v[j]);
    }
  }
  for (; k0 < kc; ++k0) {
    for (int r = 0; r < kNr; ++r) panel[k0 * kNr + r] = rows[r * kc + k0];
  }
}

constexpr KernelSet kAvx2 = {
    Isa::kAvx2,
    {DotRows<kWF32>, DotRows<kWF16>, DotRows<kWBF16>, DotRows<kWQ8_0>, DotRows<kWQ4_0>,
     DotRows<kWQ4_1>, DotRowsQ4_KAvx2, DotRowsQ5_KAvx2, DotRowsQ6_KAvx2, DotRowsQ2_KScalar,
     DotRowsQ3_KScalar},
    {Dequant<kWF32>, Dequant<kWF16>, Dequant<kWBF16>, Dequant<kWQ8_0>, Dequant<kWQ4_0>,
     Dequant<kWQ4_1>, DequantQ4_KAvx2, DequantQ5_KAvx2, DequantQ6_KAvx2, DequantQ2_KScalar,
     DequantQ3_KScalar},
    kMr,
    kNr,
    Gemm,
    TransposePanel,
};

}  // namespace

const KernelSet* Avx2KernelSet() { return &kAvx2; }

}  // namespace jisu::matmul_internal

#else  // not x86-64

namespace jisu::matmul_internal {
const KernelSet* Avx2KernelSet() { return nullptr; }
}  // namespace jisu::matmul_internal

#endif
