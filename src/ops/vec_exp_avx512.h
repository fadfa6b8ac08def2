// exp(x) on 16 floats for AVX-512 kernels (softmax, SiLU): range reduction x = n ln2 + r,
// |r| <= ln2/2, a degree-6 Taylor polynomial for e^r (truncation < 1e-7 relative) and
// scalef for 2^n. Max relative error about 2 ulp over [-87, 88]; inputs are clamped to that
// range, so exp(-inf) gives ~1e-38 instead of 0 (harmless where it is added to a sum >= 1).
// Include only from files whose functions carry an AVX-512 target attribute.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

namespace jisu::vec_internal {

__attribute__((target("avx512f"))) inline __attribute__((always_inline)) __m512 Exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

}  // namespace jisu::vec_internal
#endif
