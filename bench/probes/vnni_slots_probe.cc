// Probe (a benchmark, not part of the build): what does one float operation cost next to
// vpdpbusd on this core? The interleaved int8 decode kernels (matmul_interleaved_avx512.cc)
// issue, per 16 rows x 32 columns x token, 8 vpdpbusd and a few float operations (int->float
// convert, scale product, FMA, the Q4_1 minimum's FMA). This times NC independent vpdpbusd
// chains alone and with X extra independent operations of one kind per NC vpdpbusd, and prints
// billions of vpdpbusd per second: where an extra kind shares the vpdpbusd pipes, the rate
// falls to NC / (NC + X) of the rate alone.
//
// Not in the CMake build; build and run it by hand:
//   g++ -O2 -DNC=8 bench/probes/vnni_slots_probe.cc -o /tmp/vnni_slots && /tmp/vnni_slots
#include <immintrin.h>

#include <chrono>
#include <cstdio>

#ifndef NC
#define NC 8
#endif

enum Extra { kFma, kMul, kCvt, kShiftAnd };

template <Extra E, int X>
__attribute__((target("avx512f,avx512bw,avx512vnni,avx512dq"), noinline)) double Run(long iters) {
  __m512i a[NC];
  __m512 f[8];
  for (int i = 0; i < NC; ++i) a[i] = _mm512_set1_epi32(i);
  for (int i = 0; i < 8; ++i) f[i] = _mm512_set1_ps(1.0f + static_cast<float>(i) * 1e-9f);
  const __m512i w = _mm512_set1_epi8(3), q = _mm512_set1_epi8(1);
  const __m512 s = _mm512_set1_ps(1.0000001f), s2 = _mm512_set1_ps(0.9999999f);
  const auto t0 = std::chrono::steady_clock::now();
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < NC; ++i) a[i] = _mm512_dpbusd_epi32(a[i], w, q);
#pragma GCC unroll 8
    for (int i = 0; i < X; ++i) {
      if constexpr (E == kFma) f[i] = _mm512_fmadd_ps(f[i], s, s2);
      if constexpr (E == kMul) f[i] = _mm512_mul_ps(f[i], s);
      if constexpr (E == kCvt) f[i] = _mm512_cvtepi32_ps(_mm512_castps_si512(f[i]));
      if constexpr (E == kShiftAnd) {
        f[i] = _mm512_castsi512_ps(
            _mm512_and_si512(_mm512_srli_epi16(_mm512_castps_si512(f[i]), 4), w));
      }
    }
  }
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  __m512i z = a[0];
  for (int i = 1; i < NC; ++i) z = _mm512_add_epi32(z, a[i]);
  __m512 zf = f[0];
  for (int i = 1; i < 8; ++i) zf = _mm512_add_ps(zf, f[i]);
  volatile int sink = _mm512_reduce_add_epi32(z) + static_cast<int>(_mm512_reduce_add_ps(zf));
  (void)sink;
  return static_cast<double>(iters) * NC / sec / 1e9;
}

int main() {
  const long n = 400000000 / NC;
  std::printf(
      "NC=%d, G vpdpbusd/s: alone %.2f | +2 fma %.2f | +4 fma %.2f | +8 fma %.2f | +4 mul %.2f"
      " | +4 cvt %.2f | +4 srl+and %.2f\n",
      NC, Run<kFma, 0>(n), Run<kFma, 2>(n), Run<kFma, 4>(n), Run<kFma, 8>(n), Run<kMul, 4>(n),
      Run<kCvt, 4>(n), Run<kShiftAnd, 4>(n));
}
