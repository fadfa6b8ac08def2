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

template <WeightKind K, int NT>
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
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* base = il + static_cast<size_t>(g * blocks) * kRec;
    __m512 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* o = base + b * kRec;
      const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(o)));
      __m512i i0[NT], i1[NT];
      for (int t = 0; t < NT; ++t) {
        i0[t] = _mm512_set1_epi32(-kZ * s[t][b]);
        i1[t] = _mm512_setzero_si512();
      }
      if constexpr (K != kWQ8_0) {
        for (int j = 0; j < 4; ++j) {
          const __m512i w = _mm512_loadu_si512(o + kHead + 64 * j);
          const __m512i lo = _mm512_and_si512(w, low4);
          const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), low4);
          for (int t = 0; t < NT; ++t) {
            i0[t] = _mm512_dpbusd_epi32(i0[t], lo, _mm512_set1_epi32(q[t][8 * b + j]));
            i1[t] = _mm512_dpbusd_epi32(i1[t], hi, _mm512_set1_epi32(q[t][8 * b + 4 + j]));
          }
        }
      } else {
        for (int j = 0; j < 8; j += 2) {
          const __m512i w0 = _mm512_loadu_si512(o + kHead + 64 * j);
          const __m512i w1 = _mm512_loadu_si512(o + kHead + 64 + 64 * j);
          for (int t = 0; t < NT; ++t) {
            i0[t] = _mm512_dpbusd_epi32(i0[t], w0, _mm512_set1_epi32(q[t][8 * b + j]));
            i1[t] = _mm512_dpbusd_epi32(i1[t], w1, _mm512_set1_epi32(q[t][8 * b + j + 1]));
          }
        }
      }
      for (int t = 0; t < NT; ++t) {
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(i0[t], i1[t])),
                                 _mm512_mul_ps(dw, _mm512_set1_ps(d[t][b])), acc[t]);
      }
      if constexpr (K == kWQ4_1) {
        const __m512 mw =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(o + 32)));
        for (int t = 0; t < NT; ++t) {
          acc[t] =
              _mm512_fmadd_ps(mw, _mm512_set1_ps(d[t][b] * static_cast<float>(s[t][b])), acc[t]);
        }
      }
    }
    const int64_t valid = rows - g * kIlRows;
    const __mmask16 m =
        valid >= kIlRows ? __mmask16{0xffff} : static_cast<__mmask16>((1u << valid) - 1);
    for (int t = 0; t < NT; ++t) {
      _mm512_mask_storeu_ps(y + t * y_stride + g * kIlRows, m, acc[t]);
    }
  }
}

template <WeightKind K>
JISU_IL void IlDotAny(const uint8_t* il, int64_t rows, int64_t g0, int64_t g1,
                      const QuantizedActs& a, int64_t t0, int num_tokens, float* y,
                      int64_t y_stride) {
  static_assert(kMaxDotTokens == 4);
  switch (num_tokens) {
    case 1:
      return IlDot<K, 1>(il, rows, g0, g1, a, t0, y, y_stride);
    case 2:
      return IlDot<K, 2>(il, rows, g0, g1, a, t0, y, y_stride);
    case 3:
      return IlDot<K, 3>(il, rows, g0, g1, a, t0, y, y_stride);
    default:
      return IlDot<K, 4>(il, rows, g0, g1, a, t0, y, y_stride);
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
