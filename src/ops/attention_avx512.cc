// AVX-512 paged attention for one query position (see attention.h). Per query head of the
// group: q stays in registers while the key rows stream past (one dot product and one
// horizontal sum per position), softmax runs 16 scores at a time with a vector exp, and the
// weighted sum of value rows accumulates in registers; 1/sum is applied once at the end.
// Differs from the portable loops only by summation order and exp's last-bit rounding.
#include "ops/attention.h"
#include "ops/cpu_features.h"

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "ops/vec_exp_avx512.h"

#define JISU_ATT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))

namespace jisu::attention_internal {
namespace {

template <int C>  // head_dim = 16 * C
JISU_ATT_AVX512 void Attend(const float* q, int64_t group, float scale, const PagedKvHead& kv,
                            int64_t first, int64_t last, float* scores, int64_t score_stride,
                            float* out) {
  constexpr int64_t kHeadDim = 16 * C;
  const int64_t n = last - first + 1;
  const int64_t bs = kv.block_size;
  for (int64_t g = 0; g < group; ++g) {
    __m512 qv[C];
    for (int c = 0; c < C; ++c) qv[c] = _mm512_loadu_ps(q + g * kHeadDim + 16 * c);
    float* s = scores + g * score_stride;
    for (int64_t p0 = first; p0 <= last;) {
      const int64_t slot = p0 % bs;
      const int64_t count = std::min(bs - slot, last - p0 + 1);
      const float* k = kv.keys + kv.block_table[p0 / bs] * kv.block_stride + slot * kHeadDim;
      float* sp = s + (p0 - first);
      int64_t i = 0;
      for (; i + 4 <= count; i += 4) {
        __m512 a[4];
        for (int r = 0; r < 4; ++r) {
          const float* kr = k + (i + r) * kHeadDim;
          a[r] = _mm512_mul_ps(qv[0], _mm512_loadu_ps(kr));
          for (int c = 1; c < C; ++c)
            a[r] = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(kr + 16 * c), a[r]);
        }
        for (int r = 0; r < 4; ++r) sp[i + r] = _mm512_reduce_add_ps(a[r]) * scale;
      }
      for (; i < count; ++i) {
        const float* kr = k + i * kHeadDim;
        __m512 a = _mm512_mul_ps(qv[0], _mm512_loadu_ps(kr));
        for (int c = 1; c < C; ++c) a = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(kr + 16 * c), a);
        sp[i] = _mm512_reduce_add_ps(a) * scale;
      }
      p0 += count;
    }

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
    const __m512 inv_sum = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));

    __m512 o[C];
    for (int c = 0; c < C; ++c) o[c] = _mm512_setzero_ps();
    for (int64_t p0 = first; p0 <= last;) {
      const int64_t slot = p0 % bs;
      const int64_t count = std::min(bs - slot, last - p0 + 1);
      const float* v = kv.values + kv.block_table[p0 / bs] * kv.block_stride + slot * kHeadDim;
      const float* sp = s + (p0 - first);
      for (int64_t j = 0; j < count; ++j) {
        const __m512 w = _mm512_set1_ps(sp[j]);
        for (int c = 0; c < C; ++c) {
          o[c] = _mm512_fmadd_ps(w, _mm512_loadu_ps(v + j * kHeadDim + 16 * c), o[c]);
        }
      }
      p0 += count;
    }
    for (int c = 0; c < C; ++c) {
      _mm512_storeu_ps(out + g * kHeadDim + 16 * c, _mm512_mul_ps(o[c], inv_sum));
    }
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
      Attend<2>(q, group, scale, kv, first, last, scores, score_stride, out);
      return true;
    case 64:
      Attend<4>(q, group, scale, kv, first, last, scores, score_stride, out);
      return true;
    case 96:
      Attend<6>(q, group, scale, kv, first, last, scores, score_stride, out);
      return true;
    case 128:
      Attend<8>(q, group, scale, kv, first, last, scores, score_stride, out);
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
