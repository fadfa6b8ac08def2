// AVX2 versions of element-wise ops that showed up in prefill profiles on AVX2 machines
// (SiLU's exp ran scalar, one libm call per element of [tokens, ffn]).
#include "ops/cpu_features.h"
#include "ops/elementwise.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/vec_exp_avx2.h"

namespace jisu::elementwise_internal {
namespace {

__attribute__((target("avx2,fma"))) void SiluMulImpl(float* gate, const float* up, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = vec_internal::Exp256(_mm256_sub_ps(_mm256_setzero_ps(), g));
    _mm256_storeu_ps(
        gate + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) {  // the same formula on the last few, through the vector exp
    const __m256 g = _mm256_set1_ps(gate[i]);
    const __m256 e = vec_internal::Exp256(_mm256_sub_ps(_mm256_setzero_ps(), g));
    gate[i] = _mm256_cvtss_f32(_mm256_div_ps(g, _mm256_add_ps(one, e))) * up[i];
  }
}

}  // namespace

bool SiluMulAvx2(float* gate, const float* up, int64_t n) {
  static const bool ok = GetCpuFeatures().avx2;
  if (!ok) return false;
  SiluMulImpl(gate, up, n);
  return true;
}

}  // namespace jisu::elementwise_internal

#else

namespace jisu::elementwise_internal {
bool SiluMulAvx2(float*, const float*, int64_t) { return false; }
}  // namespace jisu::elementwise_internal

#endif
