// AVX2 activation quantizer: the same per-element float operations as QuantizeRowsScalar
// (x * (127 / amax), + or - 0.5, truncate, clamp), so the bytes, scales and sums are
// bit-identical; only the loops are vectorized (scalar, it would quantize every prefill
// MatMul's input element by element on AVX2 machines).
#include "ops/act_quant.h"
#include "ops/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define JISU_AQ_AVX2 __attribute__((target("avx2,fma")))
#define JISU_AQ_AVX2_INLINE JISU_AQ_AVX2 inline __attribute__((always_inline))

namespace jisu::act_quant_internal {
namespace {

// 8 floats times id, rounded half away from zero and clamped to [-127, 127], as int32.
JISU_AQ_AVX2_INLINE __m256i Round8(__m256 v, __m256 id) {
  const __m256 u = _mm256_mul_ps(v, id);
  // u >= 0 (including -0.0, as in the scalar code) adds +0.5, else -0.5.
  const __m256 neg = _mm256_cmp_ps(u, _mm256_setzero_ps(), _CMP_LT_OQ);
  const __m256 half = _mm256_blendv_ps(_mm256_set1_ps(0.5f), _mm256_set1_ps(-0.5f), neg);
  const __m256i q = _mm256_cvttps_epi32(_mm256_add_ps(u, half));
  return _mm256_max_epi32(_mm256_min_epi32(q, _mm256_set1_epi32(127)), _mm256_set1_epi32(-127));
}

JISU_AQ_AVX2 void Rows(const float* x, int64_t x_stride, int64_t t0, int64_t t1,
                       const ActQuantRows& out) {
  const int64_t cols = out.cols;
  const int64_t nb = cols / 32;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256i ones8 = _mm256_set1_epi8(1);
  const __m256i ones16 = _mm256_set1_epi16(1);
  // The packs work per 128-bit half, leaving 4-byte groups in order 0 2 4 6 1 3 5 7.
  const __m256i unpack = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * x_stride;
    int8_t* qt = out.qs + t * cols;
    float* dlt = out.dl + t * (cols / 4);
    float* slt = out.sl + t * (cols / 4);
    for (int64_t b = 0; b < nb; ++b) {
      __m256 v[4];
      for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(xt + b * 32 + 8 * k);
      const __m256 m = _mm256_max_ps(
          _mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
          _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask)));
      __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
      h = _mm_max_ps(h, _mm_movehl_ps(h, h));
      h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
      const float amax = _mm_cvtss_f32(h);
      const float db = amax / 127.0f;
      const float idf = amax > 0.0f ? 127.0f / amax : 0.0f;
      const __m256 id = _mm256_set1_ps(idf);
      // int32 -> int16 -> int8 with saturating packs (values are within [-127, 127]).
      const __m256i p01 = _mm256_packs_epi32(Round8(v[0], id), Round8(v[1], id));
      const __m256i p23 = _mm256_packs_epi32(Round8(v[2], id), Round8(v[3], id));
      const __m256i q = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p01, p23), unpack);
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

bool QuantizeRowsAvx2(const float* x, int64_t x_stride, int64_t t0, int64_t t1,
                      const ActQuantRows& out) {
  static const bool ok = GetCpuFeatures().avx2;
  if (!ok) return false;
  Rows(x, x_stride, t0, t1, out);
  return true;
}

}  // namespace jisu::act_quant_internal

#else

namespace jisu::act_quant_internal {
bool QuantizeRowsAvx2(const float*, int64_t, int64_t, int64_t, const ActQuantRows&) {
  return false;
}
}  // namespace jisu::act_quant_internal

#endif
