// AVX2 paged attention for one query position (see attention.h). Up to 4 query heads of the
// group go together, so each key and value row is loaded (and widened from F16) once for all
// of them: q stays in L1 and enters the FMAs as a memory operand (16 ymm registers do not hold
// several heads' q). Scores: each head's 8-lane dot-product vectors of 8 positions are staged
// and summed together (one hadd tree for 8 positions, where a horizontal sum each took ~7
// instructions); softmax 8 scores at a time with a vector exp. Values: up to 16 rows of a
// block are widened into an L1 buffer once, then every head's weighted sum reads them there,
// its accumulators loaded and stored around the block. 1/sum is applied once at the end. The
// next cache block is prefetched row by row while the current one is read (blocks are
// scattered, so the hardware prefetcher restarts at each one). One head at a time (before)
// re-widened every row per head and spent ~40% of its instructions on horizontal sums; Zen 3,
// build/attention_bench (64 sequences, 4 MiB of F16 KV), median of 10 alternating runs, ns a
// call: 3 heads x 64 at 80 / 256 / 512 positions 2829 -> 2513, 7599 -> 7111, 21126 -> 18859;
// 4 x 128 at 256: 23872 -> 20497; one head (64, 256): 3248 -> 3472. Differs from the
// portable loops only by summation order and exp's last-bit rounding.
#include "ops/attention.h"
#include "ops/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "ops/simd_avx2.h"
#include "ops/vec_exp_avx2.h"

namespace jisu::attention_internal {
namespace {

using simd_avx2::HorizontalSum;

JISU_AVX2_INLINE __m256 Load8(const float* p) { return _mm256_loadu_ps(p); }
JISU_AVX2_INLINE __m256 Load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Prefetches one row of kBytes, one request per 64-byte line.
template <int64_t kBytes>
JISU_AVX2_INLINE void PrefetchRow(const void* p) {
  for (int64_t b = 0; b < kBytes; b += 64) {
    _mm_prefetch(static_cast<const char*>(p) + b, _MM_HINT_T0);
  }
}

JISU_AVX2_INLINE float HorizontalMax(__m256 v) {
  const __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 h = _mm_max_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_max_ss(h, _mm_shuffle_ps(h, h, 1)));
}

// Row registers live at once for head_dim 8C: the largest divisor of C up to 8 (96: 6).
constexpr int PieceOf(int c) { return c <= 8 ? c : c % 8 == 0 ? 8 : c / 2; }
static_assert(12 % PieceOf(12) == 0 && 16 % PieceOf(16) == 0);

// Stores scale * (the sums of stage rows 0 .. n - 1) to s[0 .. n - 1].
JISU_AVX2_INLINE void FlushScores(const float* stage, int64_t n, float scale, float* s) {
  __m256 rows[8];
  for (int r = 0; r < 8; ++r) rows[r] = _mm256_load_ps(stage + 8 * r);
  const __m256 v = _mm256_mul_ps(simd_avx2::Sum8(rows), _mm256_set1_ps(scale));
  if (n == 8) {
    _mm256_storeu_ps(s, v);
  } else {
    alignas(32) float tmp[8];
    _mm256_store_ps(tmp, v);
    for (int64_t i = 0; i < n; ++i) s[i] = tmp[i];
  }
}

// s[0 .. n - 1] = exp(s - max); returns 1 / the sum.
JISU_AVX2_INLINE float SoftmaxInPlace(float* s, int64_t n) {
  __m256 mx = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(s + i));
  float max_score = HorizontalMax(mx);
  for (int64_t j = i; j < n; ++j) max_score = std::max(max_score, s[j]);
  const __m256 maxv = _mm256_set1_ps(max_score);
  __m256 sumv = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = vec_internal::Exp256(_mm256_sub_ps(_mm256_loadu_ps(s + i), maxv));
    _mm256_storeu_ps(s + i, e);
    sumv = _mm256_add_ps(sumv, e);
  }
  float sum = HorizontalSum(sumv);
  for (; i < n; ++i) {
    s[i] = _mm256_cvtss_f32(vec_internal::Exp256(_mm256_set1_ps(s[i] - max_score)));
    sum += s[i];
  }
  return 1.0f / sum;
}

// acc[g] += sum_j w[g * score_stride + j] * rows[j] for rows [0, count) of head_dim 8C
// (float, or F16 widened as read).
template <int C, int GN, typename R>
JISU_AVX2_INLINE void AccumulateRows(const R* rows, int64_t count, const float* w,
                                     int64_t score_stride, float (*acc)[8 * C]) {
  constexpr int kPiece = PieceOf(C);
  for (int g = 0; g < GN; ++g) {
    const float* wg = w + g * score_stride;
    for (int c0 = 0; c0 < C; c0 += kPiece) {
      __m256 o[kPiece];
      for (int c = 0; c < kPiece; ++c) o[c] = _mm256_load_ps(acc[g] + 8 * (c0 + c));
      for (int64_t j = 0; j < count; ++j) {
        const __m256 wj = _mm256_broadcast_ss(wg + j);
        for (int c = 0; c < kPiece; ++c) {
          o[c] = _mm256_fmadd_ps(wj, Load8(rows + j * 8 * C + 8 * (c0 + c)), o[c]);
        }
      }
      for (int c = 0; c < kPiece; ++c) _mm256_store_ps(acc[g] + 8 * (c0 + c), o[c]);
    }
  }
}

// GN query heads (q: GN x 8C floats) over positions [first, last].
template <int C, int GN, typename T>
JISU_AVX2 void AttendFused(const float* q, float scale, const PagedKvHead& kv, int64_t first,
                           int64_t last, float* scores, int64_t score_stride, float* out) {
  constexpr int64_t kHeadDim = 8 * C;
  constexpr int64_t kRowBytes = kHeadDim * static_cast<int64_t>(sizeof(T));
  constexpr int kPiece = PieceOf(C);
  constexpr int64_t kVRows = 16;  // value rows widened at a time
  const int64_t n = last - first + 1;
  const int64_t bs = kv.block_size;
  const T* keys = static_cast<const T*>(kv.keys);
  const T* values = static_cast<const T*>(kv.values);

  alignas(32) float stage[GN][64] = {};
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
      __m256 a[GN];
      for (int c0 = 0; c0 < C; c0 += kPiece) {
        __m256 kc[kPiece];
        for (int c = 0; c < kPiece; ++c) kc[c] = Load8(kr + 8 * (c0 + c));
        for (int g = 0; g < GN; ++g) {
          const float* qg = q + g * kHeadDim + 8 * c0;
          int c = 0;
          if (c0 == 0) a[g] = _mm256_mul_ps(kc[c++], _mm256_loadu_ps(qg));
          for (; c < kPiece; ++c) a[g] = _mm256_fmadd_ps(kc[c], _mm256_loadu_ps(qg + 8 * c), a[g]);
        }
      }
      const int64_t j = p0 - first + i;
      for (int g = 0; g < GN; ++g) _mm256_store_ps(stage[g] + 8 * (j % 8), a[g]);
      if (j % 8 == 7) {
        for (int g = 0; g < GN; ++g) {
          FlushScores(stage[g], 8, scale, scores + g * score_stride + j - 7);
        }
      }
    }
    p0 += count;
  }
  if (n % 8 != 0) {
    for (int g = 0; g < GN; ++g) {
      FlushScores(stage[g], n % 8, scale, scores + g * score_stride + n / 8 * 8);
    }
  }
  float inv_sum[GN];
  for (int g = 0; g < GN; ++g) inv_sum[g] = SoftmaxInPlace(scores + g * score_stride, n);

  alignas(32) float acc[GN][kHeadDim] = {};
  // F16 rows are widened once for all heads; one head widens them as it reads them.
  constexpr bool kWiden = sizeof(T) == 2 && GN > 1;
  alignas(32) float widened[kWiden ? kVRows * kHeadDim : 1];
  for (int64_t p0 = first; p0 <= last;) {
    const int64_t slot = p0 % bs;
    const int64_t count = std::min({bs - slot, last - p0 + 1, kVRows});
    const int64_t blk = p0 / bs;
    const T* v = values + kv.block_table[blk] * kv.block_stride + slot * kHeadDim;
    // The rows after these: the rest of this block, else the next block's first rows.
    const T* vn = nullptr;
    int64_t next_rows = 0;
    if (p0 + count <= last) {
      if (slot + count < bs) {
        vn = v + count * kHeadDim;
        next_rows = std::min(count, bs - slot - count);
      } else {
        vn = values + kv.block_table[blk + 1] * kv.block_stride;
        next_rows = std::min(count, bs);
      }
    }
    const int64_t j0 = p0 - first;
    for (int64_t j = 0; j < next_rows; ++j) PrefetchRow<kRowBytes>(vn + j * kHeadDim);
    if constexpr (kWiden) {
      for (int64_t j = 0; j < count; ++j) {
        for (int c = 0; c < C; ++c) {
          _mm256_store_ps(widened + j * kHeadDim + 8 * c, Load8(v + j * kHeadDim + 8 * c));
        }
      }
      AccumulateRows<C, GN>(static_cast<const float*>(widened), count, scores + j0, score_stride,
                            acc);
    } else {
      AccumulateRows<C, GN>(v, count, scores + j0, score_stride, acc);
    }
    p0 += count;
  }
  for (int g = 0; g < GN; ++g) {
    const __m256 inv = _mm256_set1_ps(inv_sum[g]);
    for (int c = 0; c < C; ++c) {
      _mm256_storeu_ps(out + g * kHeadDim + 8 * c,
                       _mm256_mul_ps(_mm256_load_ps(acc[g] + 8 * c), inv));
    }
  }
}

// Query heads in chunks of up to 4.
template <int C, typename T>
JISU_AVX2 void AttendGroupOf(const float* q, int64_t group, float scale, const PagedKvHead& kv,
                             int64_t first, int64_t last, float* scores, int64_t score_stride,
                             float* out) {
  for (int64_t g0 = 0; g0 < group; g0 += 4) {
    const int64_t gn = std::min<int64_t>(4, group - g0);
    const float* qg = q + g0 * 8 * C;
    float* og = out + g0 * 8 * C;
    float* sg = scores + g0 * score_stride;
    switch (gn) {
      case 1:
        AttendFused<C, 1, T>(qg, scale, kv, first, last, sg, score_stride, og);
        break;
      case 2:
        AttendFused<C, 2, T>(qg, scale, kv, first, last, sg, score_stride, og);
        break;
      case 3:
        AttendFused<C, 3, T>(qg, scale, kv, first, last, sg, score_stride, og);
        break;
      default:
        AttendFused<C, 4, T>(qg, scale, kv, first, last, sg, score_stride, og);
        break;
    }
  }
}

template <int C>
JISU_AVX2 void AttendGroup(const float* q, int64_t group, float scale, const PagedKvHead& kv,
                           int64_t first, int64_t last, float* scores, int64_t score_stride,
                           float* out) {
  if (kv.type == KvType::kF16) {
    AttendGroupOf<C, uint16_t>(q, group, scale, kv, first, last, scores, score_stride, out);
  } else {
    AttendGroupOf<C, float>(q, group, scale, kv, first, last, scores, score_stride, out);
  }
}

}  // namespace

bool AttendPagedAvx2(const float* q, int64_t group, int64_t head_dim, float scale,
                     const PagedKvHead& kv, int64_t first, int64_t last, float* scores,
                     int64_t score_stride, float* out) {
  static const bool ok = GetCpuFeatures().avx2;
  if (!ok || last < first) return false;
  switch (head_dim) {
    case 32:
      AttendGroup<4>(q, group, scale, kv, first, last, scores, score_stride, out);
      return true;
    case 64:
      AttendGroup<8>(q, group, scale, kv, first, last, scores, score_stride, out);
      return true;
    case 96:
      AttendGroup<12>(q, group, scale, kv, first, last, scores, score_stride, out);
      return true;
    case 128:
      AttendGroup<16>(q, group, scale, kv, first, last, scores, score_stride, out);
      return true;
    default:
      return false;
  }
}

}  // namespace jisu::attention_internal

#else

namespace jisu::attention_internal {
bool AttendPagedAvx2(const float*, int64_t, int64_t, float, const PagedKvHead&, int64_t, int64_t,
                     float*, int64_t, float*) {
  return false;
}
}  // namespace jisu::attention_internal

#endif
