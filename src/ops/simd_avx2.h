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

}  // namespace jisu::simd_avx2

#endif
