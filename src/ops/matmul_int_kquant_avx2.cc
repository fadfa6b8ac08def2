// AVX2 integer K-quant dot kernels (formulas in matmul_int_kquant.h). Per 32-element activation
// block j, one pmaddubsw (unsigned codes x int8 activations, pair sums in int16) and one pmaddwd
// against the sub-block scale as int16 give 8 int32 lanes of 4 elements each; they are
// converted once and scaled by the token's da_j (act_quant's per-lane Dl, so no broadcast),
// summed over the super-block, and multiplied by the row's d once per super-block.
//   Q4_K/Q5_K: the mins term needs only the activation block sums: per super-block one
//     8-lane product (-dmin * m_j) * (da_j * asum_j).
//   Q6_K: codes stay unsigned (0..63) for pmaddubsw; the zero point 32 is taken off in int16
//     with pmaddubsw(32, a) per token, shared by the rows: (q - 32) * a pair sums fit int16
//     (|.| <= 2 * 32 * 127) even where the two terms wrap. The two 16-element scales of block
//     j are the low and high halves of the pmaddwd operand (lanes 0-3 vs 4-7 of the result).
// R rows share each activation load; NT tokens share each weight expansion.
#include "ops/matmul_int_kquant.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#include "ops/matmul_kernels.h"
#include "ops/quant_k.h"
#include "ops/simd_avx2.h"

namespace jisu::matmul_internal {
namespace {

using simd_avx2::F16At;
using simd_avx2::HorizontalSum;

// pshufb controls. K4: every int16 lane = byte j of a register holding sc[0..7] in both
// halves (zero-extended). Q6: from a register holding the 8 int16 scales of one half-block in
// both halves, lanes 0-7 = scale (2j) % 8 and lanes 8-15 = scale (2j + 1) % 8.
struct ShuffleTables {
  alignas(32) int8_t k4[8][32];
  alignas(32) int8_t q6[8][32];
};
constexpr ShuffleTables MakeShuffleTables() {
  ShuffleTables t{};
  for (int j = 0; j < 8; ++j) {
    for (int i = 0; i < 16; ++i) {
      t.k4[j][2 * i] = static_cast<int8_t>(j);
      t.k4[j][2 * i + 1] = static_cast<int8_t>(-128);
      const int e = (i < 8 ? 2 * j : 2 * j + 1) % 8;
      t.q6[j][2 * i] = static_cast<int8_t>(2 * e);
      t.q6[j][2 * i + 1] = static_cast<int8_t>(2 * e + 1);
    }
  }
  return t;
}
constexpr ShuffleTables kShuffle = MakeShuffleTables();

JISU_AVX2_INLINE __m256i Load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

template <WeightKind K>
constexpr size_t kBlockBytes = K == kWQ4_K   ? sizeof(BlockQ4_K)
                               : K == kWQ5_K ? sizeof(BlockQ5_K)
                                             : sizeof(BlockQ6_K);

// The hardware prefetcher does not follow R interleaved row streams on the Zen 3 VM (as for
// the Q4_0 GEMV, matmul_gemv_avx2.cc): without this, 5632 x 2048 Q4_K from DRAM ran at ~3 GB/s
// per call. The R rows after the group are contiguous, so while super-block sb of the group
// is read, the same share (R blocks' bytes) of the next group is requested.
template <WeightKind K, int R>
JISU_AVX2_INLINE void PrefetchNextGroup(const uint8_t* row0, size_t row_bytes, int64_t sb) {
  constexpr int kStep = R * static_cast<int>(kBlockBytes<K>);
  const uint8_t* next = row0 + R * row_bytes + sb * kStep;
  for (int l = 0; l < (kStep + 63) / 64; ++l) {
    _mm_prefetch(reinterpret_cast<const char*>(next + 64 * l), _MM_HINT_T0);
  }
}

// Q4_K / Q5_K: NT tokens x R rows starting at row0.
template <WeightKind K, int NT, int R>
JISU_AVX2_INLINE void DotGroupK4(const uint8_t* row0, size_t row_bytes, int64_t nsb,
                                 const QuantizedActs& a, int64_t t0, float* y, int64_t y_stride) {
  constexpr bool kQ5 = K == kWQ5_K;
  constexpr size_t kBB = kBlockBytes<K>;
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  __m256 acc[R][NT];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t sb = 0; sb < nsb; ++sb) {
    PrefetchNextGroup<K, R>(row0, row_bytes, sb);
    const uint8_t* blk[R];
    __m256i scv[R];
    __m256 dv[R];
    for (int r = 0; r < R; ++r) {
      blk[r] = row0 + r * row_bytes + sb * kBB;
      alignas(8) uint8_t sc[8], m[8];
      UnpackScalesMinsK4(blk[r] + 4, sc, m);
      uint64_t sc64, m64;
      std::memcpy(&sc64, sc, 8);
      std::memcpy(&m64, m, 8);
      scv[r] = _mm256_set1_epi64x(static_cast<long long>(sc64));
      dv[r] = _mm256_set1_ps(F16At(blk[r]));
      const __m256 mdm = _mm256_mul_ps(
          _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(m64)))),
          _mm256_set1_ps(-F16At(blk[r] + 2)));
      for (int t = 0; t < NT; ++t) {
        const __m256 dasum = _mm256_mul_ps(_mm256_loadu_ps(a.D(t0 + t) + sb * 8),
                                           _mm256_cvtepi32_ps(Load256(a.Sum(t0 + t) + sb * 8)));
        acc[r][t] = _mm256_fmadd_ps(mdm, dasum, acc[r][t]);
      }
    }
    __m256 sacc[R][NT];
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < NT; ++t) sacc[r][t] = _mm256_setzero_ps();
    }
    __m256i hcur[R];
    if constexpr (kQ5) {
      for (int r = 0; r < R; ++r) hcur[r] = _mm256_slli_epi16(Load256(blk[r] + 16), 4);
    }
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      __m256i q[2][R];
      for (int r = 0; r < R; ++r) {
        const __m256i v = Load256(blk[r] + (kQ5 ? 48 : 16) + 32 * p);
        q[0][r] = _mm256_and_si256(v, low4);
        q[1][r] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        if constexpr (kQ5) {
          // Bit j of qh[i] to bit 4 of its byte: hcur holds qh << 4 for j < 4 (a left shift by
          // 4 would lose the high byte's bits 4..7), then qh, and shifts right by one per block.
          if (p == 2) hcur[r] = Load256(blk[r] + 16);
          q[0][r] = _mm256_or_si256(q[0][r], _mm256_and_si256(hcur[r], bit4));
          hcur[r] = _mm256_srli_epi16(hcur[r], 1);
          q[1][r] = _mm256_or_si256(q[1][r], _mm256_and_si256(hcur[r], bit4));
          hcur[r] = _mm256_srli_epi16(hcur[r], 1);
        }
      }
      for (int half = 0; half < 2; ++half) {
        const int j = 2 * p + half;
        const __m256i mask = Load256(kShuffle.k4[j]);
        __m256i sc16[R];
        for (int r = 0; r < R; ++r) sc16[r] = _mm256_shuffle_epi8(scv[r], mask);
        for (int t = 0; t < NT; ++t) {
          const __m256i av = Load256(a.Qs(t0 + t) + sb * kQK_K + 32 * j);
          const __m256 dl = _mm256_loadu_ps(a.Dl(t0 + t) + sb * 64 + 8 * j);
          for (int r = 0; r < R; ++r) {
            const __m256i pr = _mm256_madd_epi16(_mm256_maddubs_epi16(q[half][r], av), sc16[r]);
            sacc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pr), dl, sacc[r][t]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < NT; ++t) acc[r][t] = _mm256_fmadd_ps(sacc[r][t], dv[r], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) y[t * y_stride + r] = HorizontalSum(acc[r][t]);
  }
}

// Q6_K: NT tokens x R rows starting at row0.
template <int NT, int R>
JISU_AVX2_INLINE void DotGroupQ6(const uint8_t* row0, size_t row_bytes, int64_t nsb,
                                 const QuantizedActs& a, int64_t t0, float* y, int64_t y_stride) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  const __m256i c32 = _mm256_set1_epi8(32);
  __m256 acc[R][NT];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t sb = 0; sb < nsb; ++sb) {
    PrefetchNextGroup<kWQ6_K, R>(row0, row_bytes, sb);
    const uint8_t* blk[R];
    __m256i sc_by_half[R][2];
    __m256 sacc[R][NT];
    for (int r = 0; r < R; ++r) {
      blk[r] = row0 + r * row_bytes + sb * sizeof(BlockQ6_K);
      const __m256i s16 =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[r] + 192)));
      sc_by_half[r][0] = _mm256_permute2x128_si256(s16, s16, 0x00);
      sc_by_half[r][1] = _mm256_permute2x128_si256(s16, s16, 0x11);
      for (int t = 0; t < NT; ++t) sacc[r][t] = _mm256_setzero_ps();
    }
    for (int h = 0; h < 2; ++h) {
      __m256i ql0[R], ql1[R], qh[R];
      for (int r = 0; r < R; ++r) {
        ql0[r] = Load256(blk[r] + 64 * h);
        ql1[r] = Load256(blk[r] + 64 * h + 32);
        qh[r] = Load256(blk[r] + 128 + 32 * h);
      }
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const int j = 4 * h + k;
        const __m256i mask = Load256(kShuffle.q6[j]);
        __m256i q[R], sc16[R];
        for (int r = 0; r < R; ++r) {
          const __m256i lo = k == 0   ? _mm256_and_si256(ql0[r], low4)
                             : k == 1 ? _mm256_and_si256(ql1[r], low4)
                             : k == 2 ? _mm256_and_si256(_mm256_srli_epi16(ql0[r], 4), low4)
                                      : _mm256_and_si256(_mm256_srli_epi16(ql1[r], 4), low4);
          // Bits 2k, 2k + 1 of qh to bits 4, 5 (16-bit shifts; the mask drops what crossed
          // a byte boundary).
          const __m256i hi = k == 0   ? _mm256_slli_epi16(qh[r], 4)
                             : k == 1 ? _mm256_slli_epi16(qh[r], 2)
                             : k == 2 ? qh[r]
                                      : _mm256_srli_epi16(qh[r], 2);
          q[r] = _mm256_or_si256(lo, _mm256_and_si256(hi, bits45));
          sc16[r] = _mm256_shuffle_epi8(sc_by_half[r][h], mask);
        }
        for (int t = 0; t < NT; ++t) {
          const __m256i av = Load256(a.Qs(t0 + t) + sb * kQK_K + 32 * j);
          const __m256 dl = _mm256_loadu_ps(a.Dl(t0 + t) + sb * 64 + 8 * j);
          const __m256i z = _mm256_maddubs_epi16(c32, av);
          for (int r = 0; r < R; ++r) {
            const __m256i pr =
                _mm256_madd_epi16(_mm256_sub_epi16(_mm256_maddubs_epi16(q[r], av), z), sc16[r]);
            sacc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pr), dl, sacc[r][t]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m256 d = _mm256_set1_ps(F16At(blk[r] + 208));
      for (int t = 0; t < NT; ++t) acc[r][t] = _mm256_fmadd_ps(sacc[r][t], d, acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) y[t * y_stride + r] = HorizontalSum(acc[r][t]);
  }
}

template <WeightKind K, int NT, int R>
JISU_AVX2_INLINE void DotGroup(const uint8_t* row0, size_t row_bytes, int64_t nsb,
                               const QuantizedActs& a, int64_t t0, float* y, int64_t y_stride) {
  if constexpr (K == kWQ6_K) {
    DotGroupQ6<NT, R>(row0, row_bytes, nsb, a, t0, y, y_stride);
  } else {
    DotGroupK4<K, NT, R>(row0, row_bytes, nsb, a, t0, y, y_stride);
  }
}

template <WeightKind K, int NT>
JISU_AVX2 void DotT(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
                    int64_t t0, float* y, int64_t y_stride) {
  constexpr int R = NT <= 2 ? 2 : 1;
  const int64_t nsb = a.cols / kQK_K;
  int64_t r = 0;
  for (; r + R <= num_rows; r += R) {
    DotGroup<K, NT, R>(w + static_cast<size_t>(r) * row_bytes, row_bytes, nsb, a, t0, y + r,
                       y_stride);
  }
  for (; r < num_rows; ++r) {
    DotGroup<K, NT, 1>(w + static_cast<size_t>(r) * row_bytes, row_bytes, nsb, a, t0, y + r,
                       y_stride);
  }
}

template <WeightKind K>
void Dot(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a, int64_t t0,
         int num_tokens, float* y, int64_t y_stride) {
  static_assert(kMaxDotTokens == 4);
  switch (num_tokens) {
    case 1:
      return DotT<K, 1>(w, row_bytes, num_rows, a, t0, y, y_stride);
    case 2:
      return DotT<K, 2>(w, row_bytes, num_rows, a, t0, y, y_stride);
    case 3:
      return DotT<K, 3>(w, row_bytes, num_rows, a, t0, y, y_stride);
    default:
      return DotT<K, 4>(w, row_bytes, num_rows, a, t0, y, y_stride);
  }
}

}  // namespace

void IntDotQ4_KAvx2(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
                    int64_t t0, int num_tokens, float* y, int64_t y_stride) {
  Dot<kWQ4_K>(w, row_bytes, num_rows, a, t0, num_tokens, y, y_stride);
}
void IntDotQ5_KAvx2(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
                    int64_t t0, int num_tokens, float* y, int64_t y_stride) {
  Dot<kWQ5_K>(w, row_bytes, num_rows, a, t0, num_tokens, y, y_stride);
}
void IntDotQ6_KAvx2(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
                    int64_t t0, int num_tokens, float* y, int64_t y_stride) {
  Dot<kWQ6_K>(w, row_bytes, num_rows, a, t0, num_tokens, y, y_stride);
}

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
// Never in a table off x86 (matmul_int_avx2.cc's set is absent there).
void IntDotQ4_KAvx2(const uint8_t*, size_t, int64_t, const QuantizedActs&, int64_t, int, float*,
                    int64_t) {}
void IntDotQ5_KAvx2(const uint8_t*, size_t, int64_t, const QuantizedActs&, int64_t, int, float*,
                    int64_t) {}
void IntDotQ6_KAvx2(const uint8_t*, size_t, int64_t, const QuantizedActs&, int64_t, int, float*,
                    int64_t) {}
}  // namespace jisu::matmul_internal

#endif
