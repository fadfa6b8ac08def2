// AVX-512 BF16 GEMM micro-kernel (matmul_bf16.h) and the bf16 rounding the packers use.
#include <cstring>

#include "ops/cpu_features.h"
#include "ops/matmul_bf16.h"

namespace jisu::matmul_internal {

void RoundToBf16Pairs(const float* src, int64_t n, uint32_t* dst) {
  auto round = [](float f) -> uint32_t {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;  // NaN: keep it quiet
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  };
  for (int64_t i = 0; i + 1 < n; i += 2) dst[i / 2] = round(src[i]) | round(src[i + 1]) << 16;
}

}  // namespace jisu::matmul_internal

#if defined(__x86_64__)
#include <immintrin.h>

#define JISU_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

namespace jisu::matmul_internal {
namespace {

// 12 tokens x 32 rows: 24 accumulators, 2 weight vectors, a broadcast activation pair.
JISU_BF16 void Gemm(int64_t pairs, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc,
                    bool accumulate) {
  __m512 acc0[kBf16Mr], acc1[kBf16Mr];
#pragma GCC unroll 12
  for (int i = 0; i < kBf16Mr; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p, a += kBf16Mr, b += kBf16Nr) {
    const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_load_si512(b));
    const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_load_si512(b + 16));
#pragma GCC unroll 12
    for (int i = 0; i < kBf16Mr; ++i) {
      const __m512bh ai = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[i])));
      acc0[i] = _mm512_dpbf16_ps(acc0[i], ai, b0);
      acc1[i] = _mm512_dpbf16_ps(acc1[i], ai, b1);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < kBf16Mr; ++i) {
    float* ci = c + i * ldc;
    if (accumulate) {
      acc0[i] = _mm512_add_ps(acc0[i], _mm512_loadu_ps(ci));
      acc1[i] = _mm512_add_ps(acc1[i], _mm512_loadu_ps(ci + 16));
    }
    _mm512_storeu_ps(ci, acc0[i]);
    _mm512_storeu_ps(ci + 16, acc1[i]);
  }
}

}  // namespace

JISU_BF16 void Avx512RoundToBf16Pairs(const float* src, int64_t n, uint32_t* dst) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + i + 16), _mm512_loadu_ps(src + i));
    _mm512_storeu_si512(dst + i / 2, reinterpret_cast<__m512i>(v));
  }
  if (i < n) RoundToBf16Pairs(src + i, n - i, dst + i / 2);
}

Bf16GemmFn Avx512Bf16Gemm() {
  static const bool ok = GetCpuFeatures().avx512 && GetCpuFeatures().avx512_bf16;
  return ok ? Gemm : nullptr;
}

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
Bf16GemmFn Avx512Bf16Gemm() { return nullptr; }
void Avx512RoundToBf16Pairs(const float* src, int64_t n, uint32_t* dst) {
  RoundToBf16Pairs(src, n, dst);
}
}  // namespace jisu::matmul_internal

#endif
