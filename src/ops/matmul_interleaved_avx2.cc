// AVX2 decode kernels on the interleaved Q4_0 / Q4_1 / Q8_0 layout (matmul_interleaved.h), for
// machines without AVX-512 VNNI. One ymm lane per row of half a 16-row group (bytes 32h .. 32h +
// 31 of each 64-byte chunk are rows 8h .. 8h + 7); each chunk meets the token's 4 activation
// bytes (broadcast) in a vpmaddubsw, which sums pairs into 16-bit lanes. The data of a group's
// record is walked once per half; the second walk finds it in L1/L2.
//
// Q4_0 / Q4_1 (u <= 15, |q| <= 127): a pair is at most 3810 in magnitude, so the 8 vpmaddubsw of
// a block (4 chunks x low and high nibbles) add up in 16 bits exactly (|sum| <= 30480) and one
// vpmaddwd widens them: 17 integer operations per 8 rows x 32 elements and token, where an
// AVX2 GEMV on GGUF rows also needs a reduction across lanes per row.
// Q8_0 (u = q + 128 does not fit vpmaddubsw's signed pairs): |q| against the activations with
// q's sign, widened per chunk.
// Either way each (row, token) gets the same exact block integer as the AVX-512 VNNI kernel and
// the same float operations in the same order, so the outputs are bit-identical to that
// kernel's on a machine that has both, and do not depend on the token count of a call.
#include "ops/cpu_features.h"
#include "ops/matmul_int.h"
#include "ops/matmul_interleaved.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>

#include "ops/simd_avx2.h"

namespace jisu::matmul_internal {
namespace {

// GCC reassociates a chain of integer adds into a tree over all 8 x NT products of a block,
// which keeps them all live and spills most of them (4x slower at 4 tokens); an empty asm that
// takes the running sum in a register keeps the chain in order.
JISU_AVX2_INLINE void KeepChain(__m256i& v) { asm("" : "+x"(v)); }

// Rows [8h, 8h + 8) of groups [g0, g1), tokens t0 .. t0 + NT - 1.
template <WeightKind K, int NT>
JISU_AVX2 void IlDotHalves(const uint8_t* il, int64_t rows, int64_t g0, int64_t g1,
                           const QuantizedActs& a, int64_t t0, float* y, int64_t y_stride) {
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
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* base = il + static_cast<size_t>(g * blocks) * kRec;
    for (int h = 0; h < 2; ++h) {
      const int64_t valid = rows - g * kIlRows - 8 * h;
      if (valid <= 0) break;
      __m256 acc[NT];
      for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* o = base + b * kRec;
        const uint8_t* chunks = o + kHead + 32 * h;
        __m256i ia[NT];
        if constexpr (K != kWQ8_0) {
          __m256i s16[NT];
          for (int t = 0; t < NT; ++t) s16[t] = _mm256_setzero_si256();
          for (int j = 0; j < 4; ++j) {
            const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunks + 64 * j));
            const __m256i lo = _mm256_and_si256(w, low4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), low4);
            for (int t = 0; t < NT; ++t) {
              s16[t] = _mm256_add_epi16(
                  s16[t], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(q[t][8 * b + j])));
              s16[t] = _mm256_add_epi16(
                  s16[t], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(q[t][8 * b + 4 + j])));
              KeepChain(s16[t]);
            }
          }
          for (int t = 0; t < NT; ++t) {
            ia[t] = _mm256_madd_epi16(s16[t], ones16);
            if constexpr (kZ != 0)
              ia[t] = _mm256_add_epi32(ia[t], _mm256_set1_epi32(-kZ * s[t][b]));
          }
        } else {
          // q = u - 128 exactly, so sum q * a = sum u * a - 128 * sum a: VNNI's integer.
          for (int t = 0; t < NT; ++t) ia[t] = _mm256_setzero_si256();
          for (int j = 0; j < 8; ++j) {
            const __m256i w = _mm256_xor_si256(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunks + 64 * j)), flip);
            const __m256i aw = _mm256_abs_epi8(w);
            for (int t = 0; t < NT; ++t) {
              const __m256i sa = _mm256_sign_epi8(_mm256_set1_epi32(q[t][8 * b + j]), w);
              ia[t] =
                  _mm256_add_epi32(ia[t], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sa), ones16));
            }
          }
        }
        const __m256 dw =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(o + 16 * h)));
        for (int t = 0; t < NT; ++t) {
          acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[t]),
                                   _mm256_mul_ps(dw, _mm256_set1_ps(d[t][b])), acc[t]);
        }
        if constexpr (K == kWQ4_1) {
          const __m256 mw =
              _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(o + 32 + 16 * h)));
          for (int t = 0; t < NT; ++t) {
            acc[t] =
                _mm256_fmadd_ps(mw, _mm256_set1_ps(d[t][b] * static_cast<float>(s[t][b])), acc[t]);
          }
        }
      }
      float* out = y + g * kIlRows + 8 * h;
      if (valid >= 8) {
        for (int t = 0; t < NT; ++t) _mm256_storeu_ps(out + t * y_stride, acc[t]);
      } else {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), lane);
        for (int t = 0; t < NT; ++t) _mm256_maskstore_ps(out + t * y_stride, m, acc[t]);
      }
    }
  }
}

template <WeightKind K>
JISU_AVX2 void IlDotAny(const uint8_t* il, int64_t rows, int64_t g0, int64_t g1,
                        const QuantizedActs& a, int64_t t0, int num_tokens, float* y,
                        int64_t y_stride) {
  static_assert(kMaxDotTokens == 4);
  switch (num_tokens) {
    case 1:
      return IlDotHalves<K, 1>(il, rows, g0, g1, a, t0, y, y_stride);
    case 2:
      return IlDotHalves<K, 2>(il, rows, g0, g1, a, t0, y, y_stride);
    case 3:
      return IlDotHalves<K, 3>(il, rows, g0, g1, a, t0, y, y_stride);
    default:
      return IlDotHalves<K, 4>(il, rows, g0, g1, a, t0, y, y_stride);
  }
}

}  // namespace

IlDotFn Avx2IlDot(WeightKind kind) {
  static const bool ok = GetCpuFeatures().avx2;  // includes FMA and F16C
  if (!ok) return nullptr;
  if (kind == kWQ4_0) return IlDotAny<kWQ4_0>;
  if (kind == kWQ4_1) return IlDotAny<kWQ4_1>;
  if (kind == kWQ8_0) return IlDotAny<kWQ8_0>;
  return nullptr;
}

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
IlDotFn Avx2IlDot(WeightKind) { return nullptr; }
}  // namespace jisu::matmul_internal

#endif
