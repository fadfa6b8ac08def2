// AVX-512 versions of element-wise ops that showed up in batched decode profiles (SiLU's exp
// ran scalar, one libm call per element of [tokens, ffn]).
#include "ops/cpu_features.h"
#include "ops/elementwise.h"

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "ops/vec_exp_avx512.h"

namespace jisu::elementwise_internal {
namespace {

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) void SiluMulImpl(
    float* gate, const float* up, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 e = vec_internal::Exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    _mm512_storeu_ps(
        gate + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_loadu_ps(up + i)));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = vec_internal::Exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    _mm512_mask_storeu_ps(
        gate + i, m,
        _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_maskz_loadu_ps(m, up + i)));
  }
}

}  // namespace

bool SiluMulAvx512(float* gate, const float* up, int64_t n) {
  static const bool ok = GetCpuFeatures().avx512;
  if (!ok) return false;
  SiluMulImpl(gate, up, n);
  return true;
}

}  // namespace jisu::elementwise_internal

#else

namespace jisu::elementwise_internal {
bool SiluMulAvx512(float*, const float*, int64_t) { return false; }
}  // namespace jisu::elementwise_internal

#endif
