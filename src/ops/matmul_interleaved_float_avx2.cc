// AVX2 decode kernels on the interleaved F16 / BF16 layout (matmul_interleaved.h), for machines
// without AVX-512. Same scheme as the AVX-512 kernels with 8-lane registers: per 8-column
// quarter of a block, each token's 8 activations are one register and meet R rows' 16-byte
// pieces, one accumulator a row and token. Sixteen ymm registers hold R x T accumulators, the
// T activations and the expanded weights: one token takes 8 rows at a time, two tokens 4,
// three or four tokens 2, each block's record whole before the next. Each
// accumulator is summed by one tree at the group's end whatever the token count, so results
// do not depend on how tokens were batched.
#include "ops/cpu_features.h"
#include "ops/matmul_interleaved.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>

#include "ops/simd_avx2.h"

namespace jisu::matmul_internal {
namespace {

using simd_avx2::Sum8;

template <WeightKind K>
JISU_AVX2_INLINE __m256 Expand8(const uint8_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (K == kWF16) {
    return _mm256_cvtph_ps(h);
  } else {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

// Block b of the group at `base`, rows [r0, r0 + R), tokens 0 .. T - 1, into acc[t][r0 + i]
// (loaded and stored around the block: 16 rows x T tokens do not fit in registers, and
// walking the group once per R rows instead read it as strided half-streams at half speed).
template <WeightKind K, int T, int R>
JISU_AVX2_INLINE void BlockRows(const uint8_t* o, const float* xb, int64_t x_stride, int r0,
                                __m256 (*acc)[kIlRows]) {
  __m256 a[T][R];
  for (int t = 0; t < T; ++t) {
    for (int i = 0; i < R; ++i) a[t][i] = acc[t][r0 + i];
  }
  for (int q = 0; q < 4; ++q) {
    __m256 xs[T];
    for (int t = 0; t < T; ++t) xs[t] = _mm256_loadu_ps(xb + t * x_stride + 8 * q);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const __m256 w = Expand8<K>(o + 64 * (r0 + i) + 16 * q);
      for (int t = 0; t < T; ++t) a[t][i] = _mm256_fmadd_ps(w, xs[t], a[t][i]);
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int i = 0; i < R; ++i) acc[t][r0 + i] = a[t][i];
  }
}

template <WeightKind K, int T>
JISU_AVX2 void FloatIlDot(const uint8_t* il, int64_t rows, int64_t blocks, int64_t g0, int64_t g1,
                          const float* x, int64_t x_stride, float* y, int64_t y_stride) {
  constexpr int R = T == 1 ? 8 : T == 2 ? 4 : 2;
  alignas(32) __m256 acc[T][kIlRows];
  alignas(32) float sums[kIlRows];
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* base = il + static_cast<size_t>(g * blocks) * (kIlRows * 64);
    for (int t = 0; t < T; ++t) {
      for (int r = 0; r < kIlRows; ++r) acc[t][r] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* o = base + b * (kIlRows * 64);
      for (int r0 = 0; r0 < kIlRows; r0 += R) {
        BlockRows<K, T, R>(o, x + 32 * b, x_stride, r0, acc);
      }
    }
    const int64_t valid = std::min<int64_t>(kIlRows, rows - g * kIlRows);
    for (int t = 0; t < T; ++t) {
      _mm256_store_ps(sums, Sum8(acc[t]));
      _mm256_store_ps(sums + 8, Sum8(acc[t] + 8));
      for (int64_t r = 0; r < valid; ++r) y[t * y_stride + g * kIlRows + r] = sums[r];
    }
  }
}

template <WeightKind K>
JISU_AVX2 void FloatIlDotAny(const uint8_t* il, int64_t rows, int64_t blocks, int64_t g0,
                             int64_t g1, const float* x, int64_t x_stride, int num_tokens, float* y,
                             int64_t y_stride) {
  static_assert(kMaxDotTokens == 4);
  switch (num_tokens) {
    case 1:
      return FloatIlDot<K, 1>(il, rows, blocks, g0, g1, x, x_stride, y, y_stride);
    case 2:
      return FloatIlDot<K, 2>(il, rows, blocks, g0, g1, x, x_stride, y, y_stride);
    case 3:
      return FloatIlDot<K, 3>(il, rows, blocks, g0, g1, x, x_stride, y, y_stride);
    default:
      return FloatIlDot<K, 4>(il, rows, blocks, g0, g1, x, x_stride, y, y_stride);
  }
}

}  // namespace

FloatIlDotFn Avx2FloatIlDot(WeightKind kind) {
  static const bool ok = GetCpuFeatures().avx2;  // includes FMA and F16C
  if (!ok) return nullptr;
  if (kind == kWF16) return FloatIlDotAny<kWF16>;
  if (kind == kWBF16) return FloatIlDotAny<kWBF16>;
  return nullptr;
}

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
FloatIlDotFn Avx2FloatIlDot(WeightKind) { return nullptr; }
}  // namespace jisu::matmul_internal

#endif
