// AVX2 integer dot kernels (pmaddubsw + pmaddwd). Q4 weights are unsigned nibbles (15 * 127 * 2
// fits int16); Q8_0 weights are signed, so they use the sign trick |w| x sign(a, w) and no zero
// point. Prefill on AVX2 runs these kernels over groups of tokens (no packed GEMM yet).
#include "ops/matmul_int.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define JISU_AVX2 __attribute__((target("avx2,fma,f16c")))
#define JISU_AVX2_INLINE JISU_AVX2 inline __attribute__((always_inline))

namespace jisu::matmul_internal {
namespace {

JISU_AVX2_INLINE float F16At(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

JISU_AVX2_INLINE float HorizontalSum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 h = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_shuffle_ps(h, h, 1)));
}

template <WeightKind K, int NT, int R>
JISU_AVX2_INLINE void IntDotGroup(const uint8_t* row0, size_t row_bytes, int64_t nb,
                                  const QuantizedActs& a, int64_t t0, float* y, int64_t y_stride) {
  constexpr size_t kBB = IntBlockBytes(K);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R][NT];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    __m256i wu[R], ws[R];
    __m256 dw[R], c[R];
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = row0 + r * row_bytes + b * kBB;
      const float d = F16At(blk);
      dw[r] = _mm256_set1_ps(d);
      if constexpr (K == kWQ8_0) {
        ws[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
        wu[r] = _mm256_abs_epi8(ws[r]);
        c[r] = _mm256_setzero_ps();
      } else {
        const __m128i q =
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + (K == kWQ4_1 ? 4 : 2)));
        wu[r] = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));
        c[r] = _mm256_set1_ps(K == kWQ4_1 ? F16At(blk + 2) : -8.0f * d);
      }
    }
    for (int t = 0; t < NT; ++t) {
      const __m256i av =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.Qs(t0 + t) + b * 32));
      const __m256 dlv = _mm256_loadu_ps(a.Dl(t0 + t) + b * 8);
      const __m256 slv = _mm256_loadu_ps(a.Sl(t0 + t) + b * 8);
      for (int r = 0; r < R; ++r) {
        const __m256i as = K == kWQ8_0 ? _mm256_sign_epi8(av, ws[r]) : av;
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wu[r], as), ones);
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dw[r], dlv), acc[r][t]);
        if constexpr (K != kWQ8_0) acc[r][t] = _mm256_fmadd_ps(slv, c[r], acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) y[t * y_stride + r] = HorizontalSum(acc[r][t]);
  }
}

template <WeightKind K, int NT>
JISU_AVX2 void IntDotT(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
                       int64_t t0, float* y, int64_t y_stride) {
  const int64_t nb = a.cols / 32;
  int64_t r = 0;
  for (; r + 2 <= num_rows; r += 2) {
    IntDotGroup<K, NT, 2>(w + static_cast<size_t>(r) * row_bytes, row_bytes, nb, a, t0, y + r,
                          y_stride);
  }
  if (r < num_rows) {
    IntDotGroup<K, NT, 1>(w + static_cast<size_t>(r) * row_bytes, row_bytes, nb, a, t0, y + r,
                          y_stride);
  }
}

template <WeightKind K>
JISU_AVX2 void IntDot(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
                      int64_t t0, int num_tokens, float* y, int64_t y_stride) {
  switch (num_tokens) {
    case 1:
      return IntDotT<K, 1>(w, row_bytes, num_rows, a, t0, y, y_stride);
    case 2:
      return IntDotT<K, 2>(w, row_bytes, num_rows, a, t0, y, y_stride);
    case 3:
      return IntDotT<K, 3>(w, row_bytes, num_rows, a, t0, y, y_stride);
    default:
      return IntDotT<K, 4>(w, row_bytes, num_rows, a, t0, y, y_stride);
  }
}

constexpr IntKernelSet kAvx2Int = {
    "avx2-int8",
    {nullptr, nullptr, nullptr, IntDot<kWQ8_0>, IntDot<kWQ4_0>, IntDot<kWQ4_1>},
    {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
    0,
};

}  // namespace

const IntKernelSet* Avx2IntKernels() { return &kAvx2Int; }

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
const IntKernelSet* Avx2IntKernels() { return nullptr; }
}  // namespace jisu::matmul_internal

#endif
