// AVX-512 paged attention for one query position (see attention.h). Up to 4 query heads of
// the group at once keep q in registers while the key rows stream past (one dot product per
// head and position, the horizontal sums of 16 positions done together), softmax runs 16 scores at
// a time with a vector exp, and the weighted sum of value rows accumulates in registers; 1/sum is
// applied once at the end. F16 rows are widened with vcvtph2ps (AVX-512F) as they are loaded.
// Differs from the portable loops only by summation order and exp's last-bit rounding.
#include "ops/attention.h"
#include "ops/cpu_features.h"

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "ops/vec_exp_avx512.h"

#define JISU_ATT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))

namespace jisu::attention_internal {
namespace {

JISU_ATT_AVX512 inline __attribute__((always_inline)) __m512 Load16(const float* p) {
  return _mm512_loadu_ps(p);
}
JISU_ATT_AVX512 inline __attribute__((always_inline)) __m512 Load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Prefetches one row of `bytes` bytes, one request per 64-byte line.
template <int64_t kBytes>
JISU_ATT_AVX512 inline __attribute__((always_inline)) void PrefetchRow(const void* p) {
  for (int64_t b = 0; b < kBytes; b += 64) {
    _mm_prefetch(static_cast<const char*>(p) + b, _MM_HINT_T0);
  }
}

// r[i] = sum of the 16 floats of row i, for 16 rows of 16 floats (64-byte aligned): pairs of
// rows, then quads, are added lane-wise after unpacking, then the four 128-bit quarters are
// folded, ~3 instructions a row where a horizontal sum each took ~8.
JISU_ATT_AVX512 inline __attribute__((always_inline)) __m512 SumRows16(const float* rows) {
  __m512 y[4];
  for (int q = 0; q < 4; ++q) {
    const float* r = rows + 64 * q;
    const __m512 v0 = _mm512_load_ps(r), v1 = _mm512_load_ps(r + 16);
    const __m512 v2 = _mm512_load_ps(r + 32), v3 = _mm512_load_ps(r + 48);
    // Per 128-bit quarter: [v0 a, v1 a, v0 b, v1 b] with a, b two-element partial sums.
    const __m512 x01 = _mm512_add_ps(_mm512_unpacklo_ps(v0, v1), _mm512_unpackhi_ps(v0, v1));
    const __m512 x23 = _mm512_add_ps(_mm512_unpacklo_ps(v2, v3), _mm512_unpackhi_ps(v2, v3));
    // Per quarter: [v0, v1, v2, v3] summed over that quarter's four lanes.
    y[q] = _mm512_add_ps(_mm512_shuffle_ps(x01, x23, 0x44), _mm512_shuffle_ps(x01, x23, 0xEE));
  }
  const __m512 s01 =
      _mm512_add_ps(_mm512_shuffle_f32x4(y[0], y[1], 0x44), _mm512_shuffle_f32x4(y[0], y[1], 0xEE));
  const __m512 s23 =
      _mm512_add_ps(_mm512_shuffle_f32x4(y[2], y[3], 0x44), _mm512_shuffle_f32x4(y[2], y[3], 0xEE));
  return _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, 0x88), _mm512_shuffle_f32x4(s01, s23, 0xDD));
}

// Scores [j0, j_end) (j0 a multiple of 16, j_end - j0 <= 16) from the staged dot-product
// vectors of each head.
template <int GN>
JISU_ATT_AVX512 inline __attribute__((always_inline)) void FlushScores(const float (*stage)[256],
                                                                       int64_t j0, int64_t j_end,
                                                                       float scale, float* scores,
                                                                       int64_t score_stride) {
  const int64_t n = j_end - j0;
  const __mmask16 m = n >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << n) - 1);
  const __m512 sc = _mm512_set1_ps(scale);
  for (int g = 0; g < GN; ++g) {
    _mm512_mask_storeu_ps(scores + g * score_stride + j0, m,
                          _mm512_mul_ps(SumRows16(stage[g]), sc));
  }
}

// GN query heads at once (q in GN * C registers): each key and value row is loaded once for
// all of them, and the next cache block is prefetched row by row while the current one is
// read (blocks are scattered, so the hardware prefetcher restarts at every block).
template <int C, int GN, typename T>
JISU_ATT_AVX512 void AttendFused(const float* q, float scale, const PagedKvHead& kv, int64_t first,
                                 int64_t last, float* scores, int64_t score_stride, float* out) {
  constexpr int64_t kHeadDim = 16 * C;
  constexpr int64_t kRowBytes = kHeadDim * static_cast<int64_t>(sizeof(T));
  const int64_t n = last - first + 1;
  const int64_t bs = kv.block_size;
  const T* keys = static_cast<const T*>(kv.keys);
  const T* values = static_cast<const T*>(kv.values);
  __m512 qv[GN][C];
  for (int g = 0; g < GN; ++g) {
    for (int c = 0; c < C; ++c) qv[g][c] = _mm512_loadu_ps(q + g * kHeadDim + 16 * c);
  }
  // Each head's 16-lane dot-product vectors of 16 keys are staged, then summed together.
  alignas(64) float stage[GN][256];
  for (int64_t p0 = first; p0 <= last;) {
    const int64_t slot = p0 % bs;
    const int64_t count = std::min(bs - slot, last - p0 + 1);
    const int64_t blk = p0 / bs;
    const T* k = keys + kv.block_table[blk] * kv.block_stride + slot * kHeadDim;
    const bool has_next = p0 + count <= last;
    const T* kn = has_next ? keys + kv.block_table[blk + 1] * kv.block_stride : nullptr;
    for (int64_t i = 0; i < count; ++i) {
      const T* kr = k + i * kHeadDim;
      if (has_next) PrefetchRow<kRowBytes>(kn + i * kHeadDim);
      __m512 kc[C];
      for (int c = 0; c < C; ++c) kc[c] = Load16(kr + 16 * c);
      const int64_t j = p0 - first + i;
      for (int g = 0; g < GN; ++g) {
        __m512 a = _mm512_mul_ps(qv[g][0], kc[0]);
        for (int c = 1; c < C; ++c) a = _mm512_fmadd_ps(qv[g][c], kc[c], a);
        _mm512_store_ps(stage[g] + 16 * (j % 16), a);
      }
      if (j % 16 == 15) FlushScores<GN>(stage, j - 15, j + 1, scale, scores, score_stride);
    }
    p0 += count;
  }
  if (n % 16 != 0) FlushScores<GN>(stage, n / 16 * 16, n, scale, scores, score_stride);
  __m512 inv_sum[GN];
  for (int g = 0; g < GN; ++g) {
    float* s = scores + g * score_stride;
    __m512 mx = _mm512_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(s + i));
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1);
    mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail, s + i));
    const __m512 max_score = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
    __m512 sum = _mm512_setzero_ps();
    for (i = 0; i + 16 <= n; i += 16) {
      const __m512 e = vec_internal::Exp512(_mm512_sub_ps(_mm512_loadu_ps(s + i), max_score));
      _mm512_storeu_ps(s + i, e);
      sum = _mm512_add_ps(sum, e);
    }
    if (tail != 0) {
      const __m512 e =
          vec_internal::Exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, s + i), max_score));
      _mm512_mask_storeu_ps(s + i, tail, e);
      sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(tail, e));
    }
    inv_sum[g] = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  }
  __m512 o[GN][C];
  for (int g = 0; g < GN; ++g) {
    for (int c = 0; c < C; ++c) o[g][c] = _mm512_setzero_ps();
  }
  for (int64_t p0 = first; p0 <= last;) {
    const int64_t slot = p0 % bs;
    const int64_t count = std::min(bs - slot, last - p0 + 1);
    const int64_t blk = p0 / bs;
    const T* v = values + kv.block_table[blk] * kv.block_stride + slot * kHeadDim;
    const bool has_next = p0 + count <= last;
    const T* vn = has_next ? values + kv.block_table[blk + 1] * kv.block_stride : nullptr;
    for (int64_t j = 0; j < count; ++j) {
      if (has_next) PrefetchRow<kRowBytes>(vn + j * kHeadDim);
      __m512 vc[C];
      for (int c = 0; c < C; ++c) vc[c] = Load16(v + j * kHeadDim + 16 * c);
      for (int g = 0; g < GN; ++g) {
        const __m512 w = _mm512_set1_ps(scores[g * score_stride + (p0 - first) + j]);
        for (int c = 0; c < C; ++c) o[g][c] = _mm512_fmadd_ps(w, vc[c], o[g][c]);
      }
    }
    p0 += count;
  }
  for (int g = 0; g < GN; ++g) {
    for (int c = 0; c < C; ++c) {
      _mm512_storeu_ps(out + g * kHeadDim + 16 * c, _mm512_mul_ps(o[g][c], inv_sum[g]));
    }
  }
}

// Query heads in chunks of up to 4 (at most 16 q registers).
template <int C, typename T>
JISU_ATT_AVX512 void AttendGroupOf(const float* q, int64_t group, float scale,
                                   const PagedKvHead& kv, int64_t first, int64_t last,
                                   float* scores, int64_t score_stride, float* out) {
  constexpr int kMaxGn = C <= 4 ? 4 : 2;
  for (int64_t g0 = 0; g0 < group; g0 += kMaxGn) {
    const int64_t gn = std::min<int64_t>(kMaxGn, group - g0);
    const float* qg = q + g0 * 16 * C;
    float* og = out + g0 * 16 * C;
    switch (gn) {
      case 1:
        AttendFused<C, 1, T>(qg, scale, kv, first, last, scores, score_stride, og);
        break;
      case 2:
        AttendFused<C, 2, T>(qg, scale, kv, first, last, scores, score_stride, og);
        break;
      case 3:
        if constexpr (kMaxGn >= 3)
          AttendFused<C, 3, T>(qg, scale, kv, first, last, scores, score_stride, og);
        break;
      default:
        if constexpr (kMaxGn >= 4)
          AttendFused<C, 4, T>(qg, scale, kv, first, last, scores, score_stride, og);
        break;
    }
  }
}

template <int C>
JISU_ATT_AVX512 void AttendGroup(const float* q, int64_t group, float scale, const PagedKvHead& kv,
                                 int64_t first, int64_t last, float* scores, int64_t score_stride,
                                 float* out) {
  if (kv.type == KvType::kF16) {
    AttendGroupOf<C, uint16_t>(q, group, scale, kv, first, last, scores, score_stride, out);
  } else {
    AttendGroupOf<C, float>(q, group, scale, kv, first, last, scores, score_stride, out);
  }
}

}  // namespace

bool AttendPagedAvx512(const float* q, int64_t group, int64_t head_dim, float scale,
                       const PagedKvHead& kv, int64_t first, int64_t last, float* scores,
                       int64_t score_stride, float* out) {
  static const bool ok = GetCpuFeatures().avx512;
  if (!ok || last < first) return false;
  switch (head_dim) {
    case 32:
      AttendGroup<2>(q, group, scale, kv, first, last, scores, score_stride, out);
      return true;
    case 64:
      AttendGroup<4>(q, group, scale, kv, first, last, scores, score_stride, out);
      return true;
    case 96:
      AttendGroup<6>(q, group, scale, kv, first, last, scores, score_stride, out);
      return true;
    case 128:
      AttendGroup<8>(q, group, scale, kv, first, last, scores, score_stride, out);
      return true;
    default:
      return false;
  }
}

}  // namespace jisu::attention_internal

#else

namespace jisu::attention_internal {
bool AttendPagedAvx512(const float*, int64_t, int64_t, float, const PagedKvHead&, int64_t, int64_t,
                       float*, int64_t, float*) {
  return false;
}
}  // namespace jisu::attention_internal

#endif
