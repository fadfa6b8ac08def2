// AVX-512 decode kernels on the interleaved F16 / BF16 layout (matmul_interleaved.h): per 32-column
// block, a token's 32 activations are two registers and meet the 16 row pieces of the block's
// record (64 bytes each, expanded to two float vectors), one accumulator per row and token.
// R rows x T tokens of accumulators are live at a time (R * T <= 16 with the activations in
// registers): one token takes all 16 rows, more tokens R rows at a time within each block.
// Each accumulator is summed to a scalar by one tree at the group's end, the same
// for every token count, so results do not depend on how tokens were batched.
#include "ops/cpu_features.h"
#include "ops/matmul_interleaved.h"

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#define JISU_FIL __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))

namespace jisu::matmul_internal {
namespace {

template <WeightKind K>
JISU_FIL inline __m512 Expand(const uint8_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if constexpr (K == kWF16) {
    return _mm512_cvtph_ps(h);
  } else {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

// Lane r of the result = the sum of acc[r]'s 16 lanes, by the tree ((v[i] + v[i + 8]) then
// + [i + 4], + [i + 2], + [i + 1]) for every r.
JISU_FIL inline __m512 Sum16(const __m512* acc) {
  __m512 b[8], c[4], d[2];
  for (int i = 0; i < 8; ++i) {  // 256-bit halves: lanes 0-7 row 2i, 8-15 row 2i + 1
    b[i] = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2 * i], acc[2 * i + 1], 0x44),
                         _mm512_shuffle_f32x4(acc[2 * i], acc[2 * i + 1], 0xee));
  }
  for (int i = 0; i < 4; ++i) {  // 128-bit lane L: row 4i + L
    c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(b[2 * i], b[2 * i + 1], 0xdd));
  }
  for (int j = 0; j < 2; ++j) {  // lane L: two sums of row 8j + L, two of row 8j + 4 + L
    d[j] = _mm512_add_ps(_mm512_shuffle_ps(c[2 * j], c[2 * j + 1], 0x44),
                         _mm512_shuffle_ps(c[2 * j], c[2 * j + 1], 0xee));
  }
  // Element 4L + m: row 4m + L.
  const __m512 e =
      _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], 0x88), _mm512_shuffle_ps(d[0], d[1], 0xdd));
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(idx, e);
}

// Block b's rows [r0, r0 + R), tokens 0 .. T - 1, added to acc[t][r0 + i].
template <WeightKind K, int T, int R>
JISU_FIL inline void BlockRows(const uint8_t* record, const float* xb, int64_t x_stride, int r0,
                               __m512 (*acc)[kIlRows]) {
  __m512 x0[T], x1[T];
  for (int t = 0; t < T; ++t) {
    x0[t] = _mm512_loadu_ps(xb + t * x_stride);
    x1[t] = _mm512_loadu_ps(xb + t * x_stride + 16);
  }
  const uint8_t* o = record + 64 * r0;
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    const __m512 w0 = Expand<K>(o + 64 * i);
    const __m512 w1 = Expand<K>(o + 64 * i + 32);
    for (int t = 0; t < T; ++t) {
      acc[t][r0 + i] = _mm512_fmadd_ps(w0, x0[t], acc[t][r0 + i]);
      acc[t][r0 + i] = _mm512_fmadd_ps(w1, x1[t], acc[t][r0 + i]);
    }
  }
}

// One token: the 16 accumulators stay in registers for the whole group. More tokens: R rows
// at a time within each block, their accumulators loaded and stored around it (in L1), so the
// group is still read once, in order; R-row passes over the whole group read it as strided
// streams and ran slower than the GGUF rows (2048 x 5632, 2 tokens: 10.3 vs 11.2 GB/s).
template <WeightKind K, int T>
JISU_FIL void FloatIlDot(const uint8_t* il, int64_t rows, int64_t blocks, int64_t g0, int64_t g1,
                         const float* x, int64_t x_stride, float* y, int64_t y_stride) {
  constexpr int R = T == 1 ? 16 : T == 2 ? 8 : 4;
  alignas(64) __m512 acc[T][kIlRows];
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* base = il + static_cast<size_t>(g * blocks) * (kIlRows * 64);
    for (int t = 0; t < T; ++t) {
#pragma GCC unroll 16
      for (int r = 0; r < kIlRows; ++r) acc[t][r] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < blocks; ++b) {
#pragma GCC unroll 4
      for (int r0 = 0; r0 < kIlRows; r0 += R) {
        BlockRows<K, T, R>(base + b * (kIlRows * 64), x + 32 * b, x_stride, r0, acc);
      }
    }
    const int64_t valid = rows - g * kIlRows;
    const __mmask16 m =
        valid >= kIlRows ? __mmask16{0xffff} : static_cast<__mmask16>((1u << valid) - 1);
    for (int t = 0; t < T; ++t) {
      _mm512_mask_storeu_ps(y + t * y_stride + g * kIlRows, m, Sum16(acc[t]));
    }
  }
}

template <WeightKind K>
JISU_FIL void FloatIlDotAny(const uint8_t* il, int64_t rows, int64_t blocks, int64_t g0, int64_t g1,
                            const float* x, int64_t x_stride, int num_tokens, float* y,
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

FloatIlDotFn Avx512FloatIlDot(WeightKind kind) {
  static const bool ok = GetCpuFeatures().avx512;  // includes F16C
  if (!ok) return nullptr;
  if (kind == kWF16) return FloatIlDotAny<kWF16>;
  if (kind == kWBF16) return FloatIlDotAny<kWBF16>;
  return nullptr;
}

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
FloatIlDotFn Avx512FloatIlDot(WeightKind) { return nullptr; }
}  // namespace jisu::matmul_internal

#endif
