// AVX-512 BF16 kernels on the interleaved copy's bf16 pairs (matmul_bf16.h): the GEMM
// micro-kernel, the decode dot, and the bf16 rounding of activations.
#include <algorithm>
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
JISU_BF16 void Gemm(int64_t pairs, const uint32_t* a, const uint32_t* b_lo, const uint32_t* b_hi,
                    float* c, int64_t ldc, bool accumulate) {
  __m512 acc0[kBf16Mr], acc1[kBf16Mr];
#pragma GCC unroll 12
  for (int i = 0; i < kBf16Mr; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p, a += kBf16Mr, b_lo += 16, b_hi += 16) {
    const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_load_si512(b_lo));
    const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_load_si512(b_hi));
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

// G groups x T tokens of the decode dot, one accumulator (16 rows) each: the group's lanes are
// its rows, so no reduction across lanes, and the chains are the GEMM's (matmul_bf16.h).
// G * T chains hide vdpbf16ps's latency; G groups are G sequential streams (IlDot picks G).
template <int T, int G>
JISU_BF16 inline void IlDotGroups(const uint32_t* il, int64_t rows, int64_t pairs, int64_t g,
                                  const uint32_t* xp, int64_t xs, float* y, int64_t ys) {
  const uint32_t* w[G];
  for (int i = 0; i < G; ++i) w[i] = il + (g + i) * pairs * 16;
  __m512 total[G][T];
  for (int i = 0; i < G; ++i) {
    for (int t = 0; t < T; ++t) total[i][t] = _mm512_setzero_ps();
  }
  for (int64_t p0 = 0; p0 < pairs; p0 += kBf16SlicePairs) {
    const int64_t pe = std::min(pairs, p0 + kBf16SlicePairs);
    __m512 acc[G][T];
    for (int i = 0; i < G; ++i) {
      for (int t = 0; t < T; ++t) acc[i][t] = _mm512_setzero_ps();
    }
    for (int64_t p = p0; p < pe; ++p) {
      __m512bh a[T];
      for (int t = 0; t < T; ++t) {
        a[t] = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xp[t * xs + p])));
      }
      for (int i = 0; i < G; ++i) {
        const __m512bh wv = reinterpret_cast<__m512bh>(_mm512_load_si512(w[i] + p * 16));
        for (int t = 0; t < T; ++t) acc[i][t] = _mm512_dpbf16_ps(acc[i][t], a[t], wv);
      }
    }
    for (int i = 0; i < G; ++i) {
      for (int t = 0; t < T; ++t) {
        total[i][t] = p0 == 0 ? acc[i][t] : _mm512_add_ps(acc[i][t], total[i][t]);
      }
    }
  }
  for (int i = 0; i < G; ++i) {
    const int64_t valid = rows - (g + i) * 16;
    const __mmask16 m = valid >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << valid) - 1);
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ys + (g + i) * 16, m, total[i][t]);
  }
}

template <int T, int G>
JISU_BF16 void IlDotRun(const uint32_t* il, int64_t rows, int64_t pairs, int64_t g0, int64_t g1,
                        const uint32_t* xp, int64_t xs, float* y, int64_t ys) {
  int64_t g = g0;
  for (; g + G <= g1; g += G) IlDotGroups<T, G>(il, rows, pairs, g, xp, xs, y, ys);
  for (; g < g1; ++g) IlDotGroups<T, 1>(il, rows, pairs, g, xp, xs, y, ys);
}

JISU_BF16 void IlDot(const uint32_t* il, int64_t rows, int64_t pairs, int64_t g0, int64_t g1,
                     const uint32_t* xp, int64_t xs, int num_tokens, float* y, int64_t ys) {
  switch (num_tokens) {
    case 1:
      // One group at a time: one sequential stream, one vdpbf16ps chain. Four groups at once
      // (four chains, four streams) read less from memory on one Zen 4 core: 5632 x 2048,
      // 1 thread, 512 MiB cycled, 8 alternating runs, median 28.9 vs 31.7 GB/s (the probe
      // reads ~32), TinyLlama F16 tg64 at 1 thread 13.2 -> 14.6 tok/s; 2 threads unchanged.
      return IlDotRun<1, 1>(il, rows, pairs, g0, g1, xp, xs, y, ys);
    case 2:
      return IlDotRun<2, 2>(il, rows, pairs, g0, g1, xp, xs, y, ys);
    case 3:
      return IlDotRun<3, 1>(il, rows, pairs, g0, g1, xp, xs, y, ys);
    default:
      return IlDotRun<4, 1>(il, rows, pairs, g0, g1, xp, xs, y, ys);
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

Bf16IlDotFn Avx512Bf16IlDot() { return Avx512Bf16Gemm() != nullptr ? IlDot : nullptr; }

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
Bf16GemmFn Avx512Bf16Gemm() { return nullptr; }
Bf16IlDotFn Avx512Bf16IlDot() { return nullptr; }
void Avx512RoundToBf16Pairs(const float* src, int64_t n, uint32_t* dst) {
  RoundToBf16Pairs(src, n, dst);
}
}  // namespace jisu::matmul_internal

#endif
