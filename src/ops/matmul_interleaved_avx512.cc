// AVX-512 VNNI decode kernels on the interleaved Q4_0 / Q4_1 / Q8_0 layout (matmul_interleaved.h).
// One zmm lane per row of a 16-row group: per block and token, the 16 row scales are one f16
// load, and each 64-byte chunk meets the token's 4 activation bytes (broadcast) in one
// vpdpbusd; the zero point is the start value (-z * block sum of the activations), a Q4_1
// minimum one more FMA with the activations' scaled block sum. Up to
// kMaxDotTokens tokens share each weight load. No software prefetch: a group is one sequential
// stream that the hardware prefetcher follows; prefetching 1-4 KiB ahead was no faster on Zen 4
// (5632 x 2048, 512 MiB working set, 1 and 2 threads; 1 KiB was slower) and costs loads.
#include "ops/cpu_features.h"
#include "ops/matmul_int.h"
#include "ops/matmul_interleaved.h"

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#define JISU_IL __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c")))

namespace jisu::matmul_internal {
namespace {

// NG groups per walk share each activation broadcast (one vpbroadcastd per NG vpdpbusd: at 4
// tokens the broadcasts were as many as the vpdpbusd). Each (row, token) sums the same integers
// into one accumulator (exact: |sum| < 2^17) and meets the same float operations in the same
// order whatever NG and NT are, so the outputs do not depend on them.
template <WeightKind K, int NT, int NG>
JISU_IL void IlDot(const uint8_t* il, int64_t rows, int64_t g0, int64_t g1, const QuantizedActs& a,
                   int64_t t0, float* y, int64_t y_stride) {
  constexpr size_t kRec = IlRecordBytes(K);
  constexpr size_t kHead = IlHeaderBytes(K);
  constexpr int kZ = IntZeroPoint(K);
  const int64_t blocks = a.cols / 32;
  const int32_t* q[NT];
  const float* d[NT];
  const int32_t* s[NT];
  for (int t = 0; t < NT; ++t) {
    q[t] = reinterpret_cast<const int32_t*>(a.Qs(t0 + t));
    d[t] = a.D(t0 + t);
    s[t] = a.Sum(t0 + t);
  }
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  for (int64_t g = g0; g + NG <= g1; g += NG) {
    const uint8_t* base[NG];
    __m512 acc[NG][NT];
    for (int n = 0; n < NG; ++n) {
      base[n] = il + static_cast<size_t>((g + n) * blocks) * kRec;
      for (int t = 0; t < NT; ++t) acc[n][t] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* o[NG];
      __m512i ia[NG][NT];
      for (int t = 0; t < NT; ++t) {
        const __m512i start = _mm512_set1_epi32(-kZ * s[t][b]);
        for (int n = 0; n < NG; ++n) ia[n][t] = start;
      }
      for (int n = 0; n < NG; ++n) o[n] = base[n] + b * kRec;
      if constexpr (K != kWQ8_0) {
        for (int j = 0; j < 4; ++j) {
          __m512i lo[NG], hi[NG];
          for (int n = 0; n < NG; ++n) {
            const __m512i w = _mm512_loadu_si512(o[n] + kHead + 64 * j);
            lo[n] = _mm512_and_si512(w, low4);
            hi[n] = _mm512_and_si512(_mm512_srli_epi16(w, 4), low4);
          }
          for (int t = 0; t < NT; ++t) {
            const __m512i qa = _mm512_set1_epi32(q[t][8 * b + j]);
            const __m512i qb = _mm512_set1_epi32(q[t][8 * b + 4 + j]);
            for (int n = 0; n < NG; ++n) {
              ia[n][t] = _mm512_dpbusd_epi32(ia[n][t], lo[n], qa);
              ia[n][t] = _mm512_dpbusd_epi32(ia[n][t], hi[n], qb);
            }
          }
        }
      } else {
        for (int j = 0; j < 8; j += 2) {
          __m512i w0[NG], w1[NG];
          for (int n = 0; n < NG; ++n) {
            w0[n] = _mm512_loadu_si512(o[n] + kHead + 64 * j);
            w1[n] = _mm512_loadu_si512(o[n] + kHead + 64 + 64 * j);
          }
          for (int t = 0; t < NT; ++t) {
            const __m512i qa = _mm512_set1_epi32(q[t][8 * b + j]);
            const __m512i qb = _mm512_set1_epi32(q[t][8 * b + j + 1]);
            for (int n = 0; n < NG; ++n) {
              ia[n][t] = _mm512_dpbusd_epi32(ia[n][t], w0[n], qa);
              ia[n][t] = _mm512_dpbusd_epi32(ia[n][t], w1[n], qb);
            }
          }
        }
      }
      for (int n = 0; n < NG; ++n) {
        const __m512 dw =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(o[n])));
        for (int t = 0; t < NT; ++t) {
          acc[n][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[n][t]),
                                      _mm512_mul_ps(dw, _mm512_set1_ps(d[t][b])), acc[n][t]);
        }
        if constexpr (K == kWQ4_1) {
          const __m512 mw =
              _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(o[n] + 32)));
          for (int t = 0; t < NT; ++t) {
            acc[n][t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(d[t][b] * static_cast<float>(s[t][b])),
                                        acc[n][t]);
          }
        }
      }
    }
    for (int n = 0; n < NG; ++n) {
      const int64_t valid = rows - (g + n) * kIlRows;
      const __mmask16 m =
          valid >= kIlRows ? __mmask16{0xffff} : static_cast<__mmask16>((1u << valid) - 1);
      for (int t = 0; t < NT; ++t) {
        _mm512_mask_storeu_ps(y + t * y_stride + (g + n) * kIlRows, m, acc[n][t]);
      }
    }
  }
}

// Pairs of groups, then the odd one out.
template <WeightKind K, int NT>
JISU_IL void IlDotPairs(const uint8_t* il, int64_t rows, int64_t g0, int64_t g1,
                        const QuantizedActs& a, int64_t t0, float* y, int64_t y_stride) {
  const int64_t mid = g0 + (g1 - g0) / 2 * 2;
  IlDot<K, NT, 2>(il, rows, g0, mid, a, t0, y, y_stride);
  if (mid < g1) IlDot<K, NT, 1>(il, rows, mid, g1, a, t0, y, y_stride);
}

template <WeightKind K>
JISU_IL void IlDotAny(const uint8_t* il, int64_t rows, int64_t g0, int64_t g1,
                      const QuantizedActs& a, int64_t t0, int num_tokens, float* y,
                      int64_t y_stride) {
  static_assert(kMaxDotTokens == 4);
  switch (num_tokens) {
    case 1:
      return IlDot<K, 1, 1>(il, rows, g0, g1, a, t0, y, y_stride);
    case 2:
      return IlDotPairs<K, 2>(il, rows, g0, g1, a, t0, y, y_stride);
    case 3:
      return IlDotPairs<K, 3>(il, rows, g0, g1, a, t0, y, y_stride);
    default:
      return IlDotPairs<K, 4>(il, rows, g0, g1, a, t0, y, y_stride);
  }
}

}  // namespace

IlDotFn Avx512VnniIlDot(WeightKind kind) {
  static const bool ok = GetCpuFeatures().avx512 && GetCpuFeatures().avx512_vnni;
  if (!ok) return nullptr;
  if (kind == kWQ4_0) return IlDotAny<kWQ4_0>;
  if (kind == kWQ4_1) return IlDotAny<kWQ4_1>;
  if (kind == kWQ8_0) return IlDotAny<kWQ8_0>;
  return nullptr;
}

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
IlDotFn Avx512VnniIlDot(WeightKind) { return nullptr; }
}  // namespace jisu::matmul_internal

#endif
