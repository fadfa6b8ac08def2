// AVX-512 activation quantizer: the same per-element float operations as QuantizeRowsScalar
// (x * (127 / amax), + or - 0.5, truncate, clamp), so the int8 values, scales and sums are
// bit-identical; only the loops are vectorized (this ran scalar and took ~20% of a batch-32
// decode step, because every MatMul on the integer path quantizes its input).
#include "ops/act_quant.h"
#include "ops/cpu_features.h"

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#define JISU_AQ_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#define JISU_AQ_AVX512_INLINE JISU_AQ_AVX512 inline __attribute__((always_inline))

namespace jisu::act_quant_internal {
namespace {

// 16 floats times id, rounded half away from zero and clamped to [-127, 127], as int32.
JISU_AQ_AVX512_INLINE __m512i Round16(__m512 v, __m512 id) {
  const __m512 u = _mm512_mul_ps(v, id);
  // u >= 0 (including -0.0, as in the scalar code) adds +0.5, else -0.5.
  const __mmask16 neg = _mm512_cmp_ps_mask(u, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 half = _mm512_mask_blend_ps(neg, _mm512_set1_ps(0.5f), _mm512_set1_ps(-0.5f));
  const __m512i q = _mm512_cvttps_epi32(_mm512_add_ps(u, half));
  return _mm512_max_epi32(_mm512_min_epi32(q, _mm512_set1_epi32(127)), _mm512_set1_epi32(-127));
}

JISU_AQ_AVX512 void Rows(const float* x, int64_t x_stride, int64_t t0, int64_t t1,
                         const ActQuantRows& out) {
  const int64_t cols = out.cols;
  const int64_t nb = cols / 32;
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  const __m256i ones8 = _mm256_set1_epi8(1);
  const __m256i ones16 = _mm256_set1_epi16(1);
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * x_stride;
    int8_t* qt = out.qs + t * cols;
    float* dlt = out.dl + t * (cols / 4);
    float* slt = out.sl + t * (cols / 4);
    for (int64_t b = 0; b < nb; ++b) {
      const __m512 v0 = _mm512_loadu_ps(xt + b * 32);
      const __m512 v1 = _mm512_loadu_ps(xt + b * 32 + 16);
      const float amax = _mm512_reduce_max_ps(
          _mm512_max_ps(_mm512_and_ps(v0, abs_mask), _mm512_and_ps(v1, abs_mask)));
      const float db = amax / 127.0f;
      const float idf = amax > 0.0f ? 127.0f / amax : 0.0f;
      const __m512 id = _mm512_set1_ps(idf);
      const __m128i q0 = _mm512_cvtepi32_epi8(Round16(v0, id));
      const __m128i q1 = _mm512_cvtepi32_epi8(Round16(v1, id));
      const __m256i q = _mm256_set_m128i(q1, q0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qt + b * 32), q);
      // Sums of each 4 consecutive values (exact in int16/int32): u8 ones x s8 q, pairwise.
      const __m256i s4 = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), ones16);
      const __m256 dbv = _mm256_set1_ps(db);
      _mm256_storeu_ps(dlt + b * 8, dbv);
      _mm256_storeu_ps(slt + b * 8, _mm256_mul_ps(dbv, _mm256_cvtepi32_ps(s4)));
      __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s4), _mm256_extracti128_si256(s4, 1));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
      out.d[t * nb + b] = db;
      out.sum[t * nb + b] = _mm_cvtsi128_si32(s);
    }
  }
}

}  // namespace

bool QuantizeRowsAvx512(const float* x, int64_t x_stride, int64_t t0, int64_t t1,
                        const ActQuantRows& out) {
  static const bool ok = GetCpuFeatures().avx512;
  if (!ok) return false;
  Rows(x, x_stride, t0, t1, out);
  return true;
}

}  // namespace jisu::act_quant_internal

#else

namespace jisu::act_quant_internal {
bool QuantizeRowsAvx512(const float*, int64_t, int64_t, int64_t, const ActQuantRows&) {
  return false;
}
}  // namespace jisu::act_quant_internal

#endif
