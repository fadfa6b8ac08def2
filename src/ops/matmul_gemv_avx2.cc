// AVX2 decode GEMV for Q4_0 / Q8_0 / Q4_1 weights (no VNNI: pmaddubsw + pmaddwd). Reads the same
// prepared activations as the AVX-512 kernel (matmul_gemv.h), a block pair per step and four
// rows per pass sharing each activation load.
//   - Q4_0: the two blocks' 16 packed bytes side by side in one ymm; the low nibbles meet the
//     first 32 bytes of the pair's q4 chunks, the high nibbles the next 32, and the two
//     pmaddubsw results add in int16 (2 * 2 * 15 * 127 fits). pmaddwd gives int32 lanes
//     [block b x4 | block b+1 x4], the zero point is one add of the lanes' offsets, and the
//     lane scales are the pair's two f16 scales spread by one permute. Q4_1 likewise, with
//     the minimum's term in place of the zero point.
//   - Q8_0: signed weights, so the sign trick |w| x sign(a, w) (no zero point); the two blocks'
//     pmaddwd results are folded by one phaddd into lanes [b b b+1 b+1 | b b b+1 b+1].
// Per row and block pair: one int -> float conversion, one multiply and one FMA.
#include "ops/cpu_features.h"
#include "ops/matmul_gemv.h"
#include "ops/matmul_int.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#include "ops/simd_avx2.h"

namespace jisu::matmul_internal {
namespace {

using simd_avx2::HorizontalSum;

JISU_AVX2_INLINE uint32_t Load16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

constexpr int kRowsPerPass = 4;

// The hardware prefetcher follows one sequential stream well but not R interleaved rows here
// (Zen 3 VM, 5632 x 2048 q4_0 from DRAM, 1 thread: 4 rows per pass ran at ~0.6x the rate of
// 1 row per pass), so each pass prefetches the next R-row group (contiguous) in step with its
// own progress: pair p of R rows covers R * 2 block bytes of the current group, and the same
// share of the next group is requested. That made 4 rows per pass the faster one again.
template <WeightKind K, int R>
JISU_AVX2_INLINE void PrefetchNext(const uint8_t* row0, size_t row_bytes, int64_t p) {
  constexpr int kStep = R * 2 * static_cast<int>(IntBlockBytes(K));
  const uint8_t* next = row0 + R * row_bytes + p * kStep;
  for (int l = 0; l < (kStep + 63) / 64 + 1; ++l) {
    _mm_prefetch(reinterpret_cast<const char*>(next + 64 * l), _MM_HINT_T0);
  }
}

// Q4_0 (zero point 8) and Q4_1 (no zero point; the block minimum m times the block's
// activation sum, lane-wise: m * d_a * (lane sum), with the lane sums read back from the
// Q4_0 offsets, -8 * sum).
template <WeightKind K, int R>
JISU_AVX2_INLINE void RowsQ4(const uint8_t* row0, size_t row_bytes, const GemvActs& a, float* y) {
  constexpr size_t kBB = IntBlockBytes(K);
  constexpr bool kMin = K == kWQ4_1;
  constexpr size_t kQs = kMin ? 4 : 2;
  const int64_t nb = a.blocks;
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i sel = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t p = 0; p < a.pairs; ++p) {
    PrefetchNext<K, R>(row0, row_bytes, p);
    const int64_t b = 2 * p;
    const bool full = b + 1 < nb;
    const __m256i alo = _mm256_load_si256(reinterpret_cast<const __m256i*>(a.q4 + p * 64));
    const __m256i ahi = _mm256_load_si256(reinterpret_cast<const __m256i*>(a.q4 + p * 64 + 32));
    // Lane i covers activation bytes 4i.. of both halves: the offsets of chunks i and 8 + i.
    const __m256i off =
        _mm256_add_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(a.off4 + p * 16)),
                         _mm256_load_si256(reinterpret_cast<const __m256i*>(a.off4 + p * 16 + 8)));
    const __m256 da = _mm256_load_ps(a.da4 + p * 16);  // [d_b x4 | d_b+1 x4]
    __m256 dsum = _mm256_setzero_ps();
    if constexpr (kMin) dsum = _mm256_mul_ps(da, _mm256_cvtepi32_ps(_mm256_srai_epi32(off, 3)));
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = row0 + r * row_bytes + b * kBB;
      const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQs));
      uint32_t h = Load16(blk);
      uint32_t hm = kMin ? Load16(blk + 2) : 0;
      __m256i v;
      if (full) {
        v = _mm256_inserti128_si256(
            _mm256_castsi128_si256(q0),
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kBB + kQs)), 1);
        h |= Load16(blk + kBB) << 16;
        if constexpr (kMin) hm |= Load16(blk + kBB + 2) << 16;
      } else {
        v = _mm256_zextsi128_si256(q0);  // the missing block meets zero activations
      }
      const __m256i lo = _mm256_and_si256(v, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      const __m256i s16 =
          _mm256_add_epi16(_mm256_maddubs_epi16(lo, alo), _mm256_maddubs_epi16(hi, ahi));
      __m256i isum = _mm256_madd_epi16(s16, ones);
      if constexpr (!kMin) isum = _mm256_add_epi32(isum, off);
      const __m256 d2 =
          _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(h))));
      const __m256 dw = _mm256_permutevar8x32_ps(d2, sel);
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, da), acc[r]);
      if constexpr (kMin) {
        // dsum holds d_a * (-8 * lane sum) / 8 = -d_a * lane sum, so subtract.
        const __m256 m2 =
            _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(hm))));
        acc[r] = _mm256_fnmadd_ps(_mm256_permutevar8x32_ps(m2, sel), dsum, acc[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) y[r] = HorizontalSum(acc[r]);
}

template <int R>
JISU_AVX2_INLINE void RowsQ8(const uint8_t* row0, size_t row_bytes, const GemvActs& a, float* y) {
  constexpr size_t kBB = IntBlockBytes(kWQ8_0);
  const int64_t nb = a.blocks;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t p = 0; p < a.pairs; ++p) {
    PrefetchNext<kWQ8_0, R>(row0, row_bytes, p);
    const int64_t b = 2 * p;
    const bool full = b + 1 < nb;
    const __m256i a0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(a.qn + p * 64));
    const __m256i a1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(a.qn + p * 64 + 32));
    // phaddd lane order: [b b b+1 b+1] in both halves.
    const __m128 dpair = _mm_shuffle_ps(_mm_set1_ps(a.dan[p * 16]), _mm_set1_ps(a.dan[p * 16 + 8]),
                                        _MM_SHUFFLE(0, 0, 0, 0));
    const __m256 da = _mm256_set_m128(dpair, dpair);
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = row0 + r * row_bytes + b * kBB;
      const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
      const __m256i m0 = _mm256_madd_epi16(
          _mm256_maddubs_epi16(_mm256_abs_epi8(w0), _mm256_sign_epi8(a0, w0)), ones);
      uint64_t h = Load16(blk) * 0x10001u;
      __m256i m1 = _mm256_setzero_si256();
      if (full) {
        const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kBB + 2));
        m1 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w1), _mm256_sign_epi8(a1, w1)),
                               ones);
        h |= static_cast<uint64_t>(Load16(blk + kBB) * 0x10001u) << 32;
      }
      const __m256i isum = _mm256_hadd_epi32(m0, m1);
      // f16 [d0 d0 d1 d1] twice -> lane scales in phaddd order.
      const __m256 dw = _mm256_cvtph_ps(_mm_set1_epi64x(static_cast<int64_t>(h)));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, da), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) y[r] = HorizontalSum(acc[r]);
}

template <WeightKind K, int R>
JISU_AVX2_INLINE void Rows(const uint8_t* row0, size_t row_bytes, const GemvActs& a, float* y) {
  if constexpr (K == kWQ4_0 || K == kWQ4_1) {
    RowsQ4<K, R>(row0, row_bytes, a, y);
  } else {
    RowsQ8<R>(row0, row_bytes, a, y);
  }
}

template <WeightKind K>
JISU_AVX2 void Gemv(const uint8_t* w, size_t row_bytes, int64_t num_rows, const GemvActs& a,
                    float* y) {
  int64_t r = 0;
  for (; r + kRowsPerPass <= num_rows; r += kRowsPerPass) {
    Rows<K, kRowsPerPass>(w + static_cast<size_t>(r) * row_bytes, row_bytes, a, y + r);
  }
  for (; r < num_rows; ++r) Rows<K, 1>(w + static_cast<size_t>(r) * row_bytes, row_bytes, a, y + r);
}

}  // namespace

GemvFn Avx2Gemv(WeightKind kind) {
  static const bool ok = GetCpuFeatures().avx2;
  if (!ok) return nullptr;
  if (kind == kWQ4_0) return Gemv<kWQ4_0>;
  if (kind == kWQ8_0) return Gemv<kWQ8_0>;
  if (kind == kWQ4_1) return Gemv<kWQ4_1>;
  return nullptr;
}

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
GemvFn Avx2Gemv(WeightKind) { return nullptr; }
}  // namespace jisu::matmul_internal

#endif
