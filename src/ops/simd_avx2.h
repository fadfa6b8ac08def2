// Helpers shared by the AVX2 kernels of src/ops. Every function carries the target attribute
// itself (the files are built without -mavx2, so one binary runs on any x86-64 and the kernel
// sets are chosen at run time, cpu_features.h); kernels declared JISU_AVX2 inline them.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#define JISU_AVX2 __attribute__((target("avx2,fma,f16c")))
#define JISU_AVX2_INLINE JISU_AVX2 inline __attribute__((always_inline))

namespace jisu::simd_avx2 {

// v[0] + ... + v[7], as (v0 + v4 + v2 + v6) + (v1 + v5 + v3 + v7).
JISU_AVX2_INLINE float HorizontalSum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 h = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

// The IEEE half at p (unaligned), as a float.
JISU_AVX2_INLINE float F16At(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Lane i of the result = the sum of a[i]'s 8 lanes, by the same tree for every i (lanes do not
// mix: a row's garbage reaches only its own lane).
JISU_AVX2_INLINE __m256 Sum8(const __m256* a) {
  const __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

}  // namespace jisu::simd_avx2

#endif
