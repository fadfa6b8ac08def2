// AVX-512 VNNI decode GEMV for Q4_0 / Q8_0 weights (layout and arithmetic in matmul_gemv.h).
// One row at a time, front to back, so the weights are read as one sequential stream: on Zen 4
// four rows per pass (sharing each activation load) ran at half the speed (TinyLlama-1.1B
// shape, Q4_0 decode 2 threads 18.5 -> 35 tok/s; bench/results/2026-12-02-cpu-decode-zen4.md);
// the activations stay in L1 either way. Per block pair: the weight bytes
// (Q4_0: two 128-bit broadcasts, a variable shift and a mask; Q8_0: a 512-bit load and an xor),
// one vpdpbusd, the two f16 scales turned into a lane vector, one multiply and one FMA.
#include "ops/cpu_features.h"
#include "ops/matmul_gemv.h"
#include "ops/matmul_int.h"

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#define JISU_GEMV \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define JISU_GEMV_INLINE JISU_GEMV inline __attribute__((always_inline))

namespace jisu::matmul_internal {
namespace {

JISU_GEMV_INLINE uint32_t Load16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

// Bytes ahead of the current block at which the row is prefetched (about the next row of a
// 2048-column Q4_0 matrix); 384 and 0 were slower at one thread on Zen 4.
constexpr int kPrefetchBytes = 1024;

// y = one row (at row) . a.
template <WeightKind K>
JISU_GEMV_INLINE float Row(const uint8_t* row, const GemvActs& a) {
  constexpr size_t kBB = IntBlockBytes(K);
  constexpr bool kQ4 = K == kWQ4_0;
  const int64_t nb = a.blocks;
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  // Q4_0: no shift for the low-nibble chunks 0, 1; 4 for the high-nibble chunks 2, 3.
  const __m512i shift = _mm512_set_epi64(0x0004000400040004, 0x0004000400040004, 0x0004000400040004,
                                         0x0004000400040004, 0, 0, 0, 0);
  // Lane -> which of the pair's two scales.
  const __m512i sel = kQ4 ? _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1)
                          : _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const int8_t* aq = kQ4 ? a.q4 : a.qn;
  const int32_t* aoff = kQ4 ? a.off4 : a.off8;
  const float* ada = kQ4 ? a.da4 : a.dan;
  __m512 acc = _mm512_setzero_ps();
  for (int64_t p = 0; p < a.pairs; ++p) {
    const int64_t b = 2 * p;
    const bool full = b + 1 < nb;
    const __m512i av = _mm512_load_si512(aq + p * 64);
    const __m512i off = _mm512_load_si512(aoff + p * 16);
    const __m512 da = _mm512_load_ps(ada + p * 16);
    const uint8_t* blk = row + b * kBB;
    _mm_prefetch(reinterpret_cast<const char*>(blk + kPrefetchBytes), _MM_HINT_T0);
    __m512i u;
    uint32_t h = Load16(blk);
    if constexpr (kQ4) {
      const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
      __m512i v;
      if (full) {
        v = _mm512_broadcast_i32x4(q0);
        v = _mm512_mask_broadcast_i32x4(
            v, 0xf0f0, _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kBB + 2)));
      } else {
        v = _mm512_maskz_broadcast_i32x4(0x0f0f, q0);
      }
      u = _mm512_and_si512(_mm512_srlv_epi16(v, shift), low4);
    } else {
      const __m256i q0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
      __m512i v = _mm512_zextsi256_si512(q0);
      if (full) {
        v = _mm512_inserti64x4(
            v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kBB + 2)), 1);
      }
      u = _mm512_xor_si512(v, flip);  // a missing block meets zero activations
    }
    if (full) h |= Load16(blk + kBB) << 16;
    const __m512i isum = _mm512_dpbusd_epi32(off, u, av);
    const __m128 d2 = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(h)));
    const __m512 dw = _mm512_permutexvar_ps(sel, _mm512_castps128_ps512(d2));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, da), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

template <WeightKind K>
JISU_GEMV void Gemv(const uint8_t* w, size_t row_bytes, int64_t num_rows, const GemvActs& a,
                    float* y) {
  for (int64_t r = 0; r < num_rows; ++r) {
    y[r] = Row<K>(w + static_cast<size_t>(r) * row_bytes, a);
  }
}

}  // namespace

GemvFn Avx512VnniGemv(WeightKind kind) {
  static const bool ok = GetCpuFeatures().avx512 && GetCpuFeatures().avx512_vnni;
  if (!ok) return nullptr;
  if (kind == kWQ4_0) return Gemv<kWQ4_0>;
  if (kind == kWQ8_0) return Gemv<kWQ8_0>;
  return nullptr;
}

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
GemvFn Avx512VnniGemv(WeightKind) { return nullptr; }
}  // namespace jisu::matmul_internal

#endif
