// AVX2 paged attention for one query position (see attention.h), one query head at a time
// (16 ymm registers hold one head's q and nothing more for head_dim 64, so heads do not share
// key loads as in the AVX-512 kernel; the rows come from L1/L2 on the second head on).
// Scores: one dot product and one horizontal sum per position; softmax 8 scores at a time
// with a vector exp; the weighted sum of value rows accumulates in registers and 1/sum is
// applied once at the end. F16 rows are widened with vcvtph2ps as they are loaded. The next
// cache block is prefetched row by row while the current one is read (blocks are scattered, so
// the hardware prefetcher restarts at each one). Differs from the portable loops only by
// summation order and exp's last-bit rounding.
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

template <int C, typename T>
JISU_AVX2 void AttendHead(const float* q, float scale, const PagedKvHead& kv, int64_t first,
                          int64_t last, float* s, float* out) {
  constexpr int64_t kHeadDim = 8 * C;
  constexpr int64_t kRowBytes = kHeadDim * static_cast<int64_t>(sizeof(T));
  const int64_t n = last - first + 1;
  const int64_t bs = kv.block_size;
  const T* keys = static_cast<const T*>(kv.keys);
  const T* values = static_cast<const T*>(kv.values);
  __m256 qv[C];
  for (int c = 0; c < C; ++c) qv[c] = _mm256_loadu_ps(q + 8 * c);
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
      __m256 a = _mm256_mul_ps(qv[0], Load8(kr));
      for (int c = 1; c < C; ++c) a = _mm256_fmadd_ps(qv[c], Load8(kr + 8 * c), a);
      s[p0 - first + i] = HorizontalSum(a) * scale;
    }
    p0 += count;
  }
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
  __m256 o[C];
  for (int c = 0; c < C; ++c) o[c] = _mm256_setzero_ps();
  for (int64_t p0 = first; p0 <= last;) {
    const int64_t slot = p0 % bs;
    const int64_t count = std::min(bs - slot, last - p0 + 1);
    const int64_t blk = p0 / bs;
    const T* v = values + kv.block_table[blk] * kv.block_stride + slot * kHeadDim;
    const bool has_next = p0 + count <= last;
    const T* vn = has_next ? values + kv.block_table[blk + 1] * kv.block_stride : nullptr;
    for (int64_t j = 0; j < count; ++j) {
      if (has_next) PrefetchRow<kRowBytes>(vn + j * kHeadDim);
      const __m256 w = _mm256_set1_ps(s[p0 - first + j]);
      for (int c = 0; c < C; ++c) {
        o[c] = _mm256_fmadd_ps(w, Load8(v + j * kHeadDim + 8 * c), o[c]);
      }
    }
    p0 += count;
  }
  const __m256 inv = _mm256_set1_ps(1.0f / sum);
  for (int c = 0; c < C; ++c) _mm256_storeu_ps(out + 8 * c, _mm256_mul_ps(o[c], inv));
}

template <int C>
JISU_AVX2 void AttendGroup(const float* q, int64_t group, float scale, const PagedKvHead& kv,
                           int64_t first, int64_t last, float* scores, int64_t score_stride,
                           float* out) {
  for (int64_t g = 0; g < group; ++g) {
    if (kv.type == KvType::kF16) {
      AttendHead<C, uint16_t>(q + g * 8 * C, scale, kv, first, last, scores + g * score_stride,
                              out + g * 8 * C);
    } else {
      AttendHead<C, float>(q + g * 8 * C, scale, kv, first, last, scores + g * score_stride,
                           out + g * 8 * C);
    }
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
