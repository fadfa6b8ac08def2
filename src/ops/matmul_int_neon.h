// Internal to the two AArch64 integer-kernel files (matmul_int_neon.cc: any NEON CPU;
// matmul_int_neon_dotprod.cc: built for the SDOT extension). The kernels are written once over
// a dot policy D with
//   D::Dot(acc, w, a)        acc lane i += sum_{e<4} w[4i + e] * a[4i + e]   (int8 x int8)
//   D::DotLane<g>(acc, w, a) the same with a's 4-byte group g in every lane
// which is one SDOT where the CPU has it and a widening multiply plus two pairwise adds where
// not. Everything here has internal linkage on purpose: each file compiles it for its own
// target, and one shared (inline, external) copy could leave SDOT code where the CPU lacks it.
//
// Signed products throughout: Q8_0 values are the stored int8 (the panels' u = q + 128 flipped
// back), Q4_0 nibbles minus 8, Q4_1 (and Q4_K/Q5_K panels) values 0..31, Q6_K panels -32..31;
// activations lie in [-127, 127], so no pair of products leaves int16 (2 * 128 * 127) and every
// block sum is exact in int32. The float scaling is the scalar kernels' (matmul_int_scalar.cc)
// up to the summation order.
#pragma once

#if defined(__aarch64__)
#include <arm_neon.h>

#include "ops/matmul_int.h"
#include "ops/matmul_int_kquant.h"
#include "ops/simd_neon.h"

namespace jisu::matmul_internal {
namespace {  // NOLINT(build/namespaces): see above

// Widening fallback for D::Dot: bytes 8 at a time into int16 products, adjacent pairs summed in
// int16 (exact, see above), then pairs of those into the int32 lanes.
struct WideningDot {
  static inline int32x4_t Dot(int32x4_t acc, int8x16_t w, int8x16_t a) {
    const int16x8_t p0 = vmull_s8(vget_low_s8(w), vget_low_s8(a));
    const int16x8_t p1 = vmull_high_s8(w, a);
    return vpadalq_s16(acc, vpaddq_s16(p0, p1));
  }
  template <int G>
  static inline int32x4_t DotLane(int32x4_t acc, int8x16_t w, int8x16_t a) {
    return Dot(acc, w, vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(a), G)));
  }
};

// Block b of a Q4_0 / Q4_1 / Q8_0 row as two vectors of signed values (elements 0..15, 16..31)
// and its scale dw and minimum m (Q4_1; else 0).
template <WeightKind K>
inline void LoadRowBlock(const uint8_t* row, int64_t b, int8x16_t* lo, int8x16_t* hi, float* dw,
                         float* m) {
  const uint8_t* blk = row + b * IntBlockBytes(K);
  *dw = simd_neon::LoadF16(blk);
  *m = 0.0f;
  if constexpr (K == kWQ8_0) {
    *lo = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 2));
    *hi = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 18));
  } else {
    if constexpr (K == kWQ4_1) *m = simd_neon::LoadF16(blk + 2);
    uint8x16_t l, h;
    simd_neon::UnpackNibbles(blk + (K == kWQ4_1 ? 4 : 2), &l, &h);
    *lo = vreinterpretq_s8_u8(l);
    *hi = vreinterpretq_s8_u8(h);
    if constexpr (K == kWQ4_0) {
      *lo = vsubq_s8(*lo, vdupq_n_s8(8));
      *hi = vsubq_s8(*hi, vdupq_n_s8(8));
    }
  }
}

// Decode on the GGUF rows, N tokens (each weight block unpacked once for all of them). The
// block's integer sum keeps its four lanes; the lanes are scaled in float and reduced once a row.
template <class D, WeightKind K, int N>
void IntDotN(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
             int64_t t0, float* y, int64_t y_stride) {
  const int64_t nb = a.cols / 32;
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
    float32x4_t acc[N];
    float macc[N];  // Q4_1: the minimum's share, m * da * asum per block
    for (int t = 0; t < N; ++t) {
      acc[t] = vdupq_n_f32(0.0f);
      macc[t] = 0.0f;
    }
    for (int64_t b = 0; b < nb; ++b) {
      int8x16_t lo, hi;
      float dw, m;
      LoadRowBlock<K>(row, b, &lo, &hi, &dw, &m);
      for (int t = 0; t < N; ++t) {
        const int8_t* q = a.Qs(t0 + t) + b * 32;
        int32x4_t s = D::Dot(vdupq_n_s32(0), lo, vld1q_s8(q));
        s = D::Dot(s, hi, vld1q_s8(q + 16));
        const float da = a.D(t0 + t)[b];
        acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(s), dw * da);
        if constexpr (K == kWQ4_1) macc[t] += m * da * static_cast<float>(a.Sum(t0 + t)[b]);
      }
    }
    for (int t = 0; t < N; ++t) y[t * y_stride + r] = vaddvq_f32(acc[t]) + macc[t];
  }
}

template <class D, WeightKind K>
void IntDot(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
            int64_t t0, int num_tokens, float* y, int64_t y_stride) {
  static_assert(kMaxDotTokens == 4);
  switch (num_tokens) {
    case 1:
      return IntDotN<D, K, 1>(w, row_bytes, num_rows, a, t0, y, y_stride);
    case 2:
      return IntDotN<D, K, 2>(w, row_bytes, num_rows, a, t0, y, y_stride);
    case 3:
      return IntDotN<D, K, 3>(w, row_bytes, num_rows, a, t0, y, y_stride);
    default:
      return IntDotN<D, K, 4>(w, row_bytes, num_rows, a, t0, y, y_stride);
  }
}

// Prefill on a packed panel (matmul_int.h: per block [8 groups][32 rows][4 bytes], then dw[32]
// and m[32]). Four rows' bytes of one group are one q register, so D::DotLane with the token's
// group broadcast gives those rows' group sums in its lanes. A pass covers half a panel (16
// rows) for N tokens: 4 x N float accumulators stay in registers.
constexpr int kIntNeonMr = 4;

template <class D, WeightKind K, int N>
void IntGemmN(int64_t nblocks, const uint8_t* panel, const QuantizedActs& a, int64_t t0, int64_t b0,
              float* c, int64_t ldc, int valid_rows, bool accumulate) {
  constexpr int z = K == kWQ4_0 ? 8 : 0;  // Q8_0's zero point is undone by the byte flip
  for (int half = 0; half < 2; ++half) {
    float32x4_t acc[N][4];
    for (int t = 0; t < N; ++t) {
      for (int j = 0; j < 4; ++j) acc[t][j] = vdupq_n_f32(0.0f);
    }
    for (int64_t b = 0; b < nblocks; ++b) {
      const uint8_t* pb = panel + b * kIntPanelBlockBytes;
      const float* dw = reinterpret_cast<const float*>(pb + 8 * kIntNr * 4) + 16 * half;
      const float* m = dw + kIntNr;
      int8x16_t qa[N][2];
      float da[N];
      int32_t off[N];
      for (int t = 0; t < N; ++t) {
        const int8_t* q = a.Qs(t0 + t) + (b0 + b) * 32;
        qa[t][0] = vld1q_s8(q);
        qa[t][1] = vld1q_s8(q + 16);
        da[t] = a.D(t0 + t)[b0 + b];
        off[t] = -z * a.Sum(t0 + t)[b0 + b];
      }
      for (int j = 0; j < 4; ++j) {
        const int row = 16 * half + 4 * j;
        int8x16_t wv[8];
        for (int g = 0; g < 8; ++g) {
          wv[g] = vld1q_s8(reinterpret_cast<const int8_t*>(pb + (g * kIntNr + row) * 4));
          if constexpr (K == kWQ8_0) wv[g] = veorq_s8(wv[g], vdupq_n_s8(-128));
        }
        const float32x4_t dw4 = vld1q_f32(dw + 4 * j);
        const float32x4_t m4 = vld1q_f32(m + 4 * j);
        for (int t = 0; t < N; ++t) {
          int32x4_t lo = D::template DotLane<0>(vdupq_n_s32(off[t]), wv[0], qa[t][0]);
          lo = D::template DotLane<1>(lo, wv[1], qa[t][0]);
          lo = D::template DotLane<2>(lo, wv[2], qa[t][0]);
          lo = D::template DotLane<3>(lo, wv[3], qa[t][0]);
          int32x4_t hi = K == kWQ6_K ? vdupq_n_s32(0) : lo;
          hi = D::template DotLane<0>(hi, wv[4], qa[t][1]);
          hi = D::template DotLane<1>(hi, wv[5], qa[t][1]);
          hi = D::template DotLane<2>(hi, wv[6], qa[t][1]);
          hi = D::template DotLane<3>(hi, wv[7], qa[t][1]);
          if constexpr (K == kWQ6_K) {  // signed values, a scale per half block (PackQ6_K)
            acc[t][j] = vfmaq_f32(acc[t][j], vcvtq_f32_s32(lo), vmulq_n_f32(dw4, da[t]));
            acc[t][j] = vfmaq_f32(acc[t][j], vcvtq_f32_s32(hi), vmulq_n_f32(m4, da[t]));
          } else {
            acc[t][j] = vfmaq_f32(acc[t][j], vcvtq_f32_s32(hi), vmulq_n_f32(dw4, da[t]));
            if constexpr (K == kWQ4_1) {
              const float sa = da[t] * static_cast<float>(a.Sum(t0 + t)[b0 + b]);
              acc[t][j] = vfmaq_n_f32(acc[t][j], m4, sa);
            }
          }
        }
      }
    }
    for (int t = 0; t < N; ++t) {
      for (int j = 0; j < 4; ++j) {
        const int row = 16 * half + 4 * j;
        float* ct = c + t * ldc + row;
        if (row + 4 <= valid_rows) {
          vst1q_f32(ct, accumulate ? vaddq_f32(vld1q_f32(ct), acc[t][j]) : acc[t][j]);
          continue;
        }
        float v[4];
        vst1q_f32(v, acc[t][j]);
        for (int i = 0; row + i < valid_rows; ++i) ct[i] = accumulate ? ct[i] + v[i] : v[i];
      }
    }
  }
}

template <class D, WeightKind K>
void IntGemm(int64_t nblocks, const uint8_t* panel, const QuantizedActs& a, int64_t t0,
             int num_tokens, int64_t b0, float* c, int64_t ldc, int valid_rows, bool accumulate) {
  static_assert(kIntNr == 32 && kIntNeonMr == 4);
  switch (num_tokens) {
    case 1:
      return IntGemmN<D, K, 1>(nblocks, panel, a, t0, b0, c, ldc, valid_rows, accumulate);
    case 2:
      return IntGemmN<D, K, 2>(nblocks, panel, a, t0, b0, c, ldc, valid_rows, accumulate);
    case 3:
      return IntGemmN<D, K, 3>(nblocks, panel, a, t0, b0, c, ldc, valid_rows, accumulate);
    default:
      return IntGemmN<D, K, 4>(nblocks, panel, a, t0, b0, c, ldc, valid_rows, accumulate);
  }
}

// The IntKernelSet of policy D. The K-quant dots are the portable ones (not tuned here); their
// prefill goes through the panels: Q4_K/Q5_K as Q4_1 (exact int32 sums for 5-bit values too),
// Q6_K on its signed panels.
template <class D>
constexpr IntKernelSet MakeNeonIntKernelSet(const char* name) {
  return IntKernelSet{
      name,
      {nullptr, nullptr, nullptr, IntDot<D, kWQ8_0>, IntDot<D, kWQ4_0>, IntDot<D, kWQ4_1>,
       IntDotQ4_KScalar, IntDotQ5_KScalar, IntDotQ6_KScalar},
      {nullptr, nullptr, nullptr, IntGemm<D, kWQ8_0>, IntGemm<D, kWQ4_0>, IntGemm<D, kWQ4_1>,
       IntGemm<D, kWQ4_1>, IntGemm<D, kWQ4_1>, IntGemm<D, kWQ6_K>},
      kIntNeonMr,
      "scalar-int8",
  };
}

}  // namespace
}  // namespace jisu::matmul_internal

#endif  // __aarch64__
