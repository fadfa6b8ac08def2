// AVX2 integer dot kernels (pmaddubsw + pmaddwd). Q4 weights are unsigned nibbles (15 * 127 * 2
// fits int16); Q8_0 weights are signed, so they use the sign trick |w| x sign(a, w) and no zero
// point. Prefill (from kIntGemmMinTokens tokens) runs a packed-panel micro-kernel (IntGemmT).
#include "ops/cpu_features.h"
#include "ops/matmul_int.h"
#include "ops/matmul_int_kquant.h"
#include "ops/quant_k.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <type_traits>

#include "ops/simd_avx2.h"

namespace jisu::matmul_internal {
namespace {

using simd_avx2::F16At;
using simd_avx2::HorizontalSum;

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

constexpr int kMr = 4;

// Prefill micro-kernel: NT tokens x one kIntNr-row panel (matmul_int.h), in two halves of 16
// rows (two ymm of 8 rows x 4 bytes per group of 4 elements). Per block and group, one 32-bit
// broadcast of a token's 4 activation bytes meets both ymm. Q4: pmaddubsw results add up in
// int16 over the whole block (8 groups * 2 * 15 * 127 = 30480 fits), one pmaddwd per block
// (Q5_K in Q4_1 panels: one per four groups).
// Q8_0: the panel's u = w + 128 is turned back into signed w once per load (shared by the
// tokens) for the sign trick, and every group's pmaddwd adds in int32 (2 * 128 * 127 leaves no
// int16 headroom). Then per block and 8 rows: the zero point in int32, one float scale.
template <WeightKind K, int NT>
JISU_AVX2 void IntGemmT(int64_t nblocks, const uint8_t* panel, const QuantizedActs& a, int64_t t0,
                        int64_t b0, float* c, int64_t ldc, int valid_rows, bool accumulate) {
  constexpr bool kQ8 = K == kWQ8_0;
  constexpr bool kQ5 = K == kWQ5_K;  // Q4_1 panels holding 5-bit values (matmul_int.h)
  constexpr bool kQ6 = K == kWQ6_K;  // signed values, a scale per half block (PackQ6_K)
  constexpr int z = kQ8 ? 0 : IntZeroPoint(K);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const int8_t* qs[NT];
  const float* ds[NT];
  const int32_t* sums[NT];
  for (int t = 0; t < NT; ++t) {
    qs[t] = a.Qs(t0 + t) + b0 * 32;
    ds[t] = a.D(t0 + t) + b0;
    sums[t] = a.Sum(t0 + t) + b0;
  }
  alignas(32) float out[NT][kIntNr];
  for (int h = 0; h < 2; ++h) {
    __m256 f[NT][2];
    for (int t = 0; t < NT; ++t) f[t][0] = f[t][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nblocks; ++b) {
      const uint8_t* pb = panel + b * kIntPanelBlockBytes + h * 64;
      __m256i acc[NT][2];
      __m256i s16[NT][2];  // Q5: the current half-block's int16 sums
      for (int t = 0; t < NT; ++t) {
        acc[t][0] = acc[t][1] = _mm256_setzero_si256();
        s16[t][0] = s16[t][1] = _mm256_setzero_si256();
      }
#pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) {
        __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(pb + g * 128));
        __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(pb + g * 128 + 32));
        __m256i wa0 = w0, wa1 = w1;
        if constexpr (kQ8) {
          w0 = _mm256_xor_si256(w0, flip);
          w1 = _mm256_xor_si256(w1, flip);
        }
        if constexpr (kQ8 || kQ6) {
          wa0 = _mm256_abs_epi8(w0);
          wa1 = _mm256_abs_epi8(w1);
        }
        for (int t = 0; t < NT; ++t) {
          int32_t a4;
          std::memcpy(&a4, qs[t] + b * 32 + 4 * g, 4);
          const __m256i av = _mm256_set1_epi32(a4);
          if constexpr (kQ8) {
            acc[t][0] = _mm256_add_epi32(
                acc[t][0],
                _mm256_madd_epi16(_mm256_maddubs_epi16(wa0, _mm256_sign_epi8(av, w0)), ones));
            acc[t][1] = _mm256_add_epi32(
                acc[t][1],
                _mm256_madd_epi16(_mm256_maddubs_epi16(wa1, _mm256_sign_epi8(av, w1)), ones));
          } else if constexpr (kQ6) {
            // Sign trick per group, int16 over a half block (4 * 2 * 32 * 127 = 32512 fits);
            // the halves stay apart (their scales differ): acc holds the first, s16 the second.
            s16[t][0] =
                _mm256_add_epi16(s16[t][0], _mm256_maddubs_epi16(wa0, _mm256_sign_epi8(av, w0)));
            s16[t][1] =
                _mm256_add_epi16(s16[t][1], _mm256_maddubs_epi16(wa1, _mm256_sign_epi8(av, w1)));
            if (g == 3) {
              acc[t][0] = _mm256_madd_epi16(s16[t][0], ones);
              acc[t][1] = _mm256_madd_epi16(s16[t][1], ones);
              s16[t][0] = s16[t][1] = _mm256_setzero_si256();
            } else if (g == 7) {
              s16[t][0] = _mm256_madd_epi16(s16[t][0], ones);
              s16[t][1] = _mm256_madd_epi16(s16[t][1], ones);
            }
          } else if constexpr (kQ5) {
            // Two halves of four groups: 4 * 2 * 31 * 128 = 31744 fits int16, eight would not.
            s16[t][0] = _mm256_add_epi16(s16[t][0], _mm256_maddubs_epi16(wa0, av));
            s16[t][1] = _mm256_add_epi16(s16[t][1], _mm256_maddubs_epi16(wa1, av));
            if (g % 4 == 3) {
              acc[t][0] = _mm256_add_epi32(acc[t][0], _mm256_madd_epi16(s16[t][0], ones));
              acc[t][1] = _mm256_add_epi32(acc[t][1], _mm256_madd_epi16(s16[t][1], ones));
              s16[t][0] = s16[t][1] = _mm256_setzero_si256();
            }
          } else {
            acc[t][0] = _mm256_add_epi16(acc[t][0], _mm256_maddubs_epi16(wa0, av));
            acc[t][1] = _mm256_add_epi16(acc[t][1], _mm256_maddubs_epi16(wa1, av));
          }
          // Keeps the running sums in registers: GCC otherwise reassociates the adds, computes
          // all 8 groups' products first and spills them to the stack.
          asm("" : "+x"(acc[t][0]), "+x"(acc[t][1]));
          if constexpr (kQ5 || kQ6) asm("" : "+x"(s16[t][0]), "+x"(s16[t][1]));
        }
      }
      const float* dwp =
          reinterpret_cast<const float*>(panel + b * kIntPanelBlockBytes + 8 * kIntNr * 4) + h * 16;
      const __m256 dw0 = _mm256_load_ps(dwp), dw1 = _mm256_load_ps(dwp + 8);
      if constexpr (kQ6) {
        const __m256 dh0 = _mm256_load_ps(dwp + kIntNr), dh1 = _mm256_load_ps(dwp + kIntNr + 8);
        for (int t = 0; t < NT; ++t) {
          const __m256 da = _mm256_set1_ps(ds[t][b]);
          f[t][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[t][0]), _mm256_mul_ps(dw0, da), f[t][0]);
          f[t][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[t][1]), _mm256_mul_ps(dw1, da), f[t][1]);
          f[t][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s16[t][0]), _mm256_mul_ps(dh0, da), f[t][0]);
          f[t][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s16[t][1]), _mm256_mul_ps(dh1, da), f[t][1]);
        }
        continue;
      }
      for (int t = 0; t < NT; ++t) {
        __m256i i0 = acc[t][0], i1 = acc[t][1];
        if constexpr (!kQ8 && !kQ5) {
          i0 = _mm256_madd_epi16(i0, ones);
          i1 = _mm256_madd_epi16(i1, ones);
        }
        if constexpr (z != 0) {
          const __m256i zs = _mm256_set1_epi32(-z * sums[t][b]);
          i0 = _mm256_add_epi32(i0, zs);
          i1 = _mm256_add_epi32(i1, zs);
        }
        const __m256 da = _mm256_set1_ps(ds[t][b]);
        f[t][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i0), _mm256_mul_ps(dw0, da), f[t][0]);
        f[t][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i1), _mm256_mul_ps(dw1, da), f[t][1]);
      }
      if constexpr (K == kWQ4_1 || kQ5) {
        const __m256 m0 = _mm256_load_ps(dwp + kIntNr), m1 = _mm256_load_ps(dwp + kIntNr + 8);
        for (int t = 0; t < NT; ++t) {
          const __m256 sa = _mm256_set1_ps(ds[t][b] * static_cast<float>(sums[t][b]));
          f[t][0] = _mm256_fmadd_ps(m0, sa, f[t][0]);
          f[t][1] = _mm256_fmadd_ps(m1, sa, f[t][1]);
        }
      }
    }
    for (int t = 0; t < NT; ++t) {
      _mm256_store_ps(&out[t][h * 16], f[t][0]);
      _mm256_store_ps(&out[t][h * 16 + 8], f[t][1]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    float* ct = c + t * ldc;
    if (valid_rows == kIntNr) {
      for (int j = 0; j < kIntNr; j += 8) {
        __m256 v = _mm256_load_ps(&out[t][j]);
        if (accumulate) v = _mm256_add_ps(v, _mm256_loadu_ps(ct + j));
        _mm256_storeu_ps(ct + j, v);
      }
    } else {
      for (int j = 0; j < valid_rows; ++j) ct[j] = accumulate ? ct[j] + out[t][j] : out[t][j];
    }
  }
}

template <WeightKind K>
JISU_AVX2 void IntGemm(int64_t nblocks, const uint8_t* panel, const QuantizedActs& a, int64_t t0,
                       int num_tokens, int64_t b0, float* c, int64_t ldc, int valid_rows,
                       bool accumulate) {
  switch (num_tokens) {
    case 1:
      return IntGemmT<K, 1>(nblocks, panel, a, t0, b0, c, ldc, valid_rows, accumulate);
    case 2:
      return IntGemmT<K, 2>(nblocks, panel, a, t0, b0, c, ldc, valid_rows, accumulate);
    case 3:
      return IntGemmT<K, 3>(nblocks, panel, a, t0, b0, c, ldc, valid_rows, accumulate);
    default:
      return IntGemmT<K, kMr>(nblocks, panel, a, t0, b0, c, ldc, valid_rows, accumulate);
  }
}

constexpr IntKernelSet kAvx2Int = {
    "avx2-int8",
    {nullptr, nullptr, nullptr, IntDot<kWQ8_0>, IntDot<kWQ4_0>, IntDot<kWQ4_1>, IntDotQ4_KAvx2,
     IntDotQ5_KAvx2, IntDotQ6_KAvx2},
    // Q4_K: packed into Q4_1 panels (PackIntPanel), so the Q4_1 micro-kernel; Q5_K too, with
    // its int16 sums widened every four groups; Q6_K: signed panels, the sign trick per group.
    {nullptr, nullptr, nullptr, IntGemm<kWQ8_0>, IntGemm<kWQ4_0>, IntGemm<kWQ4_1>, IntGemm<kWQ4_1>,
     IntGemm<kWQ5_K>, IntGemm<kWQ6_K>},
    kMr,
    nullptr,
};

// 8 consecutive rows' IEEE halves at p, p + stride, ... as floats.
JISU_AVX2_INLINE __m256 Halves8(const uint8_t* p, size_t stride) {
  uint16_t h[8];
  for (int i = 0; i < 8; ++i) std::memcpy(&h[i], p + i * stride, 2);
  return _mm256_cvtph_ps(_mm_setr_epi16(static_cast<int16_t>(h[0]), static_cast<int16_t>(h[1]),
                                        static_cast<int16_t>(h[2]), static_cast<int16_t>(h[3]),
                                        static_cast<int16_t>(h[4]), static_cast<int16_t>(h[5]),
                                        static_cast<int16_t>(h[6]), static_cast<int16_t>(h[7])));
}

// Packs a full panel (all kIntNr rows; w at block 0 of row 0) 8 rows at a time: each row's 16
// bytes of quantized values (a half block for Q8_0) hold 4 dwords; a 4x4 dword transpose (rows
// i and i + 4 share a ymm) gives "dword j of 8 consecutive rows", one 32-byte store of the panel
// per group of 4 elements (Q4: the low nibbles, and the high nibbles 4 groups later). Row
// addresses are computed, not kept in a table, and the scales of 8 rows convert in one
// vcvtph2ps: the per-row bookkeeping was most of the packer's time (perf, 32-token batches).
template <WeightKind K>
JISU_AVX2 void PackFullPanel(const uint8_t* w, size_t row_bytes, int64_t nblocks, uint8_t* panel) {
  constexpr size_t kBB = IntBlockBytes(K);
  static_assert(kBB <= 64, "one prefetch per row and cache line");
  // 32 interleaved row streams: the hardware prefetcher does not follow them (as for the GEMV),
  // so each row's bytes a few cache lines ahead are requested, once per 64 bytes of progress.
  constexpr size_t kPrefetchBytes = 768;
  constexpr int64_t kPrefetchEvery = 64 / kBB;
  constexpr size_t kQsOffset = K == kWQ4_1 ? 4 : 2;
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t b = 0; b < nblocks; ++b) {
    uint8_t* pb = panel + b * kIntPanelBlockBytes;
    const uint8_t* col = w + b * kBB;  // block b of row 0
    if (b % kPrefetchEvery == 0) {
      for (int r = 0; r < kIntNr; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(col + r * row_bytes + kPrefetchBytes),
                     _MM_HINT_T0);
      }
    }
    for (int k = 0; k < kIntNr / 8; ++k) {
      const uint8_t* r8 = col + 8 * k * row_bytes;
      for (int part = 0; part < (K == kWQ8_0 ? 2 : 1); ++part) {
        const uint8_t* q = r8 + kQsOffset + 16 * part;
        __m256i y[4];
        for (int i = 0; i < 4; ++i) {
          y[i] = _mm256_inserti128_si256(
              _mm256_castsi128_si256(
                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i * row_bytes))),
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + (i + 4) * row_bytes)), 1);
        }
        const __m256i t0 = _mm256_unpacklo_epi32(y[0], y[1]);
        const __m256i t1 = _mm256_unpackhi_epi32(y[0], y[1]);
        const __m256i t2 = _mm256_unpacklo_epi32(y[2], y[3]);
        const __m256i t3 = _mm256_unpackhi_epi32(y[2], y[3]);
        const __m256i o[4] = {_mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2),
                              _mm256_unpacklo_epi64(t1, t3), _mm256_unpackhi_epi64(t1, t3)};
        for (int j = 0; j < 4; ++j) {
          if constexpr (K == kWQ8_0) {
            _mm256_store_si256(reinterpret_cast<__m256i*>(pb + (4 * part + j) * 128 + k * 32),
                               _mm256_xor_si256(o[j], flip));
          } else {
            _mm256_store_si256(reinterpret_cast<__m256i*>(pb + j * 128 + k * 32),
                               _mm256_and_si256(o[j], low4));
            _mm256_store_si256(reinterpret_cast<__m256i*>(pb + (j + 4) * 128 + k * 32),
                               _mm256_and_si256(_mm256_srli_epi16(o[j], 4), low4));
          }
        }
      }
      auto* dw = reinterpret_cast<float*>(pb + 8 * kIntNr * 4);
      _mm256_store_ps(dw + 8 * k, Halves8(r8, row_bytes));
      _mm256_store_ps(dw + kIntNr + 8 * k,
                      K == kWQ4_1 ? Halves8(r8 + 2, row_bytes) : _mm256_setzero_ps());
    }
  }
}

// Q4_K and Q5_K (into the Q4_1 panel layout, PackKQuantAsQ4_1 in matmul_int.cc) and Q6_K
// (PackQ6_K there), full panels only: the 32 bytes of nibbles that sub-block j shares with its
// partner hold its group g (elements 4g .. 4g + 3) in dword g, so an 8x8 dword transpose of 8
// rows gives the panel's group rows, after one nibble of each byte is kept (Q5_K: bit j of the
// element's qh byte moved to bit 4; Q6_K: two qh bits to bits 4-5, then 32 taken off).
template <WeightKind K>
JISU_AVX2 void PackFullPanelKQuant(const uint8_t* w, size_t row_bytes, int64_t b0, int64_t nblocks,
                                   uint8_t* panel) {
  using Block = std::conditional_t<K == kWQ4_K, BlockQ4_K,
                                   std::conditional_t<K == kWQ5_K, BlockQ5_K, BlockQ6_K>>;
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  const __m256i low2 = _mm256_set1_epi8(0x03);
  const __m256i off32 = _mm256_set1_epi8(32);
  if constexpr (K == kWQ6_K) {
    for (int r = 0; r < kIntNr; ++r) {
      const auto* row = reinterpret_cast<const Block*>(w + static_cast<size_t>(r) * row_bytes);
      for (int64_t b = 0; b < nblocks; ++b) {
        const Block* blk = row + (b0 + b) / 8;
        const int j = static_cast<int>((b0 + b) % 8);
        const float d = _cvtsh_ss(blk->d);
        auto* dw = reinterpret_cast<float*>(panel + b * kIntPanelBlockBytes + 8 * kIntNr * 4);
        dw[r] = d * static_cast<float>(blk->scales[2 * j]);
        dw[kIntNr + r] = d * static_cast<float>(blk->scales[2 * j + 1]);
      }
    }
  }
  // Scales first, one super-block of a row at a time (8 sub-blocks per unpack).
  for (int r = 0; r < kIntNr && K != kWQ6_K; ++r) {
    const auto* row = reinterpret_cast<const Block*>(w + static_cast<size_t>(r) * row_bytes);
    for (int64_t b = 0; b < nblocks;) {
      const Block* blk = row + (b0 + b) / 8;
      float d = 0.0f, dmin = 0.0f;
      uint8_t sc[8] = {}, mn[8] = {};
      if constexpr (K != kWQ6_K) {
        d = _cvtsh_ss(blk->d);
        dmin = _cvtsh_ss(blk->dmin);
        UnpackScalesMinsK4(blk->scales, sc, mn);
      }
      for (int j = static_cast<int>((b0 + b) % 8); j < 8 && b < nblocks; ++j, ++b) {
        auto* dw = reinterpret_cast<float*>(panel + b * kIntPanelBlockBytes + 8 * kIntNr * 4);
        dw[r] = d * static_cast<float>(sc[j]);
        dw[kIntNr + r] = -(dmin * static_cast<float>(mn[j]));
      }
    }
  }
  for (int64_t b = 0; b < nblocks; ++b) {
    uint8_t* pb = panel + b * kIntPanelBlockBytes;
    const int64_t sb = (b0 + b) / 8;
    const int j = static_cast<int>((b0 + b) % 8);
    for (int k = 0; k < kIntNr / 8; ++k) {
      __m256i y[8];
      for (int i = 0; i < 8; ++i) {
        const auto* blk =
            reinterpret_cast<const Block*>(w + static_cast<size_t>(8 * k + i) * row_bytes) + sb;
        if constexpr (K == kWQ6_K) {
          const int h = j / 4, kk = j % 4;
          const __m256i ql = _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(blk->ql + 64 * h + 32 * (kk % 2)));
          const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qh + 32 * h));
          const __m256i lo = _mm256_and_si256(kk / 2 ? _mm256_srli_epi16(ql, 4) : ql, low4);
          const __m256i hi =
              _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * kk)), low2);
          y[i] = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), off32);
          continue;
        } else {
          y[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs + 32 * (j / 2)));
        }
        if (j % 2) y[i] = _mm256_srli_epi16(y[i], 4);
        y[i] = _mm256_and_si256(y[i], low4);
        if constexpr (K == kWQ5_K) {
          // Bit j of each qh byte to bit 4 (16-bit shifts: the mask drops what crosses bytes).
          const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qh));
          const __m256i hi = j <= 4 ? _mm256_sll_epi16(qh, _mm_cvtsi32_si128(4 - j))
                                    : _mm256_srl_epi16(qh, _mm_cvtsi32_si128(j - 4));
          y[i] = _mm256_or_si256(y[i], _mm256_and_si256(hi, bit4));
        }
      }
      const __m256i t0 = _mm256_unpacklo_epi32(y[0], y[1]), t1 = _mm256_unpackhi_epi32(y[0], y[1]);
      const __m256i t2 = _mm256_unpacklo_epi32(y[2], y[3]), t3 = _mm256_unpackhi_epi32(y[2], y[3]);
      const __m256i t4 = _mm256_unpacklo_epi32(y[4], y[5]), t5 = _mm256_unpackhi_epi32(y[4], y[5]);
      const __m256i t6 = _mm256_unpacklo_epi32(y[6], y[7]), t7 = _mm256_unpackhi_epi32(y[6], y[7]);
      // After the 64-bit unpacks v[c] holds dword c (low 128-bit half) and dword c + 4 (high
      // half) of rows 0-3 (v0-v3) or 4-7 (v4-v7).
      const __m256i v0 = _mm256_unpacklo_epi64(t0, t2), v1 = _mm256_unpackhi_epi64(t0, t2);
      const __m256i v2 = _mm256_unpacklo_epi64(t1, t3), v3 = _mm256_unpackhi_epi64(t1, t3);
      const __m256i v4 = _mm256_unpacklo_epi64(t4, t6), v5 = _mm256_unpackhi_epi64(t4, t6);
      const __m256i v6 = _mm256_unpacklo_epi64(t5, t7), v7 = _mm256_unpackhi_epi64(t5, t7);
      const __m256i lo[4] = {v0, v1, v2, v3}, hi[4] = {v4, v5, v6, v7};
      for (int c = 0; c < 4; ++c) {
        // Group c: rows 0-3 from lo's low half, rows 4-7 from hi's low half; group c + 4: highs.
        _mm256_store_si256(reinterpret_cast<__m256i*>(pb + c * 128 + k * 32),
                           _mm256_permute2x128_si256(lo[c], hi[c], 0x20));
        _mm256_store_si256(reinterpret_cast<__m256i*>(pb + (c + 4) * 128 + k * 32),
                           _mm256_permute2x128_si256(lo[c], hi[c], 0x31));
      }
    }
  }
}

}  // namespace

const IntKernelSet* Avx2IntKernels() { return &kAvx2Int; }

bool PackIntPanelAvx2(WeightKind kind, const uint8_t* w, size_t row_bytes, int valid_rows,
                      int64_t b0, int64_t nblocks, uint8_t* panel) {
  static const bool ok = GetCpuFeatures().avx2;
  if (!ok) return false;
  switch (kind) {
    case kWQ8_0:
      PackPanelWith<kWQ8_0>(w, row_bytes, valid_rows, b0, nblocks, panel, PackFullPanel<kWQ8_0>);
      return true;
    case kWQ4_0:
      PackPanelWith<kWQ4_0>(w, row_bytes, valid_rows, b0, nblocks, panel, PackFullPanel<kWQ4_0>);
      return true;
    case kWQ4_1:
      PackPanelWith<kWQ4_1>(w, row_bytes, valid_rows, b0, nblocks, panel, PackFullPanel<kWQ4_1>);
      return true;
    case kWQ4_K:
      if (valid_rows != kIntNr) return false;  // the last panel of a matrix: portable
      PackFullPanelKQuant<kWQ4_K>(w, row_bytes, b0, nblocks, panel);
      return true;
    case kWQ5_K:
      if (valid_rows != kIntNr) return false;
      PackFullPanelKQuant<kWQ5_K>(w, row_bytes, b0, nblocks, panel);
      return true;
    case kWQ6_K:
      if (valid_rows != kIntNr) return false;
      PackFullPanelKQuant<kWQ6_K>(w, row_bytes, b0, nblocks, panel);
      return true;
    default:
      return false;
  }
}

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
const IntKernelSet* Avx2IntKernels() { return nullptr; }
bool PackIntPanelAvx2(WeightKind, const uint8_t*, size_t, int, int64_t, int64_t, uint8_t*) {
  return false;
}
}  // namespace jisu::matmul_internal

#endif
