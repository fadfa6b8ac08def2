// AArch64 NEON float kernels: decode dots and the packed-panel GEMM micro-kernel on float32
// activations, weights expanded to the floats DequantizeRow produces (F16 through vcvt, which
// Armv8.0 has without the FP16 arithmetic extension). A 32-element chunk (one quant block) is
// eight q registers. Both NEON ISAs (kNeon, kNeonDotprod) use this set; they differ only in the
// integer kernels. K-quants take the portable kernels here (not tuned for NEON).
#include "ops/matmul_kernels.h"
#include "ops/matmul_kernels_kquant.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstring>

#include "core/half.h"
#include "ops/quant.h"
#include "ops/simd_neon.h"

namespace jisu::matmul_internal {
namespace {

using simd_neon::LoadF16;

// Expands chunk c (elements 32c .. 32c+31) of a row into v[0..7] (4 elements each, in order).
template <WeightKind K>
inline void LoadChunk(const uint8_t* row, int64_t c, float32x4_t v[8]) {
  if constexpr (K == kWF32) {
    const auto* p = reinterpret_cast<const float*>(row) + c * 32;
    for (int k = 0; k < 8; ++k) v[k] = vld1q_f32(p + 4 * k);
  } else if constexpr (K == kWF16) {
    const auto* p = reinterpret_cast<const float16_t*>(row) + c * 32;
    for (int k = 0; k < 4; ++k) {
      const float16x8_t h = vld1q_f16(p + 8 * k);
      v[2 * k] = vcvt_f32_f16(vget_low_f16(h));
      v[2 * k + 1] = vcvt_high_f32_f16(h);
    }
  } else if constexpr (K == kWBF16) {
    // A bf16 value is the high half of its float.
    const auto* p = reinterpret_cast<const uint16_t*>(row) + c * 32;
    for (int k = 0; k < 4; ++k) {
      const uint16x8_t h = vld1q_u16(p + 8 * k);
      v[2 * k] = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
      v[2 * k + 1] = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
    }
  } else if constexpr (K == kWQ8_0) {
    const uint8_t* blk = row + c * sizeof(BlockQ8_0);
    const float d = LoadF16(blk);
    for (int h = 0; h < 2; ++h) {
      simd_neon::S8ToF32(vld1q_s8(reinterpret_cast<const int8_t*>(blk + 2 + 16 * h)), v + 4 * h);
    }
    for (int k = 0; k < 8; ++k) v[k] = vmulq_n_f32(v[k], d);
  } else if constexpr (K == kWQ4_0) {
    const uint8_t* blk = row + c * sizeof(BlockQ4_0);
    const float d = LoadF16(blk);
    uint8x16_t lo, hi;
    simd_neon::UnpackNibbles(blk + 2, &lo, &hi);
    const int8x16_t eight = vdupq_n_s8(8);
    simd_neon::S8ToF32(vsubq_s8(vreinterpretq_s8_u8(lo), eight), v);
    simd_neon::S8ToF32(vsubq_s8(vreinterpretq_s8_u8(hi), eight), v + 4);
    for (int k = 0; k < 8; ++k) v[k] = vmulq_n_f32(v[k], d);
  } else {
    static_assert(K == kWQ4_1);
    const uint8_t* blk = row + c * sizeof(BlockQ4_1);
    const float d = LoadF16(blk);
    const float32x4_t m = vdupq_n_f32(LoadF16(blk + 2));
    uint8x16_t lo, hi;
    simd_neon::UnpackNibbles(blk + 4, &lo, &hi);
    simd_neon::U8ToF32(lo, v);
    simd_neon::U8ToF32(hi, v + 4);
    // d * q is exact, so the fused multiply-add rounds as DequantizeRow's q * d + m.
    for (int k = 0; k < 8; ++k) v[k] = vfmaq_n_f32(m, v[k], d);
  }
}

// Element i of a float-type row (for tails shorter than a chunk).
template <WeightKind K>
inline float LoadOne(const uint8_t* row, int64_t i) {
  if constexpr (K == kWF32) {
    float v;
    std::memcpy(&v, row + i * 4, 4);
    return v;
  } else {
    uint16_t h;
    std::memcpy(&h, row + i * 2, 2);
    return K == kWF16 ? F16ToF32(h) : Bf16ToF32(h);
  }
}

constexpr bool IsFloatKind(WeightKind k) { return k == kWF32 || k == kWF16 || k == kWBF16; }

// N tokens at once (a compile-time count keeps the accumulators in registers): each chunk of
// weights is expanded once and used by every token. Two accumulators a token hide the FMA
// latency.
template <WeightKind K, int N>
void DotRowsN(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows, const float* x,
              int64_t x_stride, float* y, int64_t y_stride) {
  const int64_t chunks = cols / 32;
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
    float32x4_t acc[N][2];
    for (int t = 0; t < N; ++t) acc[t][0] = acc[t][1] = vdupq_n_f32(0.0f);
    for (int64_t c = 0; c < chunks; ++c) {
      float32x4_t v[8];
      LoadChunk<K>(row, c, v);
      for (int t = 0; t < N; ++t) {
        const float* xt = x + t * x_stride + c * 32;
        for (int k = 0; k < 8; ++k)
          acc[t][k % 2] = vfmaq_f32(acc[t][k % 2], v[k], vld1q_f32(xt + 4 * k));
      }
    }
    for (int t = 0; t < N; ++t) {
      float s = vaddvq_f32(vaddq_f32(acc[t][0], acc[t][1]));
      if constexpr (IsFloatKind(K)) {
        for (int64_t i = chunks * 32; i < cols; ++i) s += LoadOne<K>(row, i) * x[t * x_stride + i];
      }
      y[t * y_stride + r] = s;
    }
  }
}

template <WeightKind K>
void DotRows(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows, const float* x,
             int64_t x_stride, int num_tokens, float* y, int64_t y_stride) {
  static_assert(kMaxDotTokens == 4);
  switch (num_tokens) {
    case 1:
      return DotRowsN<K, 1>(w, row_bytes, cols, num_rows, x, x_stride, y, y_stride);
    case 2:
      return DotRowsN<K, 2>(w, row_bytes, cols, num_rows, x, x_stride, y, y_stride);
    case 3:
      return DotRowsN<K, 3>(w, row_bytes, cols, num_rows, x, x_stride, y, y_stride);
    default:
      return DotRowsN<K, 4>(w, row_bytes, cols, num_rows, x, x_stride, y, y_stride);
  }
}

template <WeightKind K>
void Dequant(const uint8_t* src, float* dst, int64_t n) {
  const int64_t chunks = n / 32;
  for (int64_t c = 0; c < chunks; ++c) {
    float32x4_t v[8];
    LoadChunk<K>(src, c, v);
    for (int k = 0; k < 8; ++k) vst1q_f32(dst + c * 32 + 4 * k, v[k]);
  }
  if constexpr (IsFloatKind(K)) {
    for (int64_t i = chunks * 32; i < n; ++i) dst[i] = LoadOne<K>(src, i);
  }
}

// GEMM tile: 4 tokens x 16 rows, 16 accumulators; per k one load of the 4 tokens' values and
// four of the rows', each token's value taken by lane (fmla by element).
constexpr int kMr = 4;
constexpr int kNr = 16;

template <int I>
inline void FmaRow(float32x4_t acc[4], const float32x4_t b[4], float32x4_t a) {
  for (int j = 0; j < 4; ++j) acc[j] = vfmaq_laneq_f32(acc[j], b[j], a, I);
}

void Gemm(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate) {
  float32x4_t acc[kMr][4];
  for (int i = 0; i < kMr; ++i) {
    for (int j = 0; j < 4; ++j) acc[i][j] = vdupq_n_f32(0.0f);
  }
  for (int64_t k = 0; k < kc; ++k, a += kMr, b += kNr) {
    const float32x4_t av = vld1q_f32(a);
    float32x4_t bv[4];
    for (int j = 0; j < 4; ++j) bv[j] = vld1q_f32(b + 4 * j);
    FmaRow<0>(acc[0], bv, av);
    FmaRow<1>(acc[1], bv, av);
    FmaRow<2>(acc[2], bv, av);
    FmaRow<3>(acc[3], bv, av);
  }
  for (int i = 0; i < kMr; ++i) {
    float* ci = c + i * ldc;
    for (int j = 0; j < 4; ++j) {
      vst1q_f32(ci + 4 * j, accumulate ? vaddq_f32(vld1q_f32(ci + 4 * j), acc[i][j]) : acc[i][j]);
    }
  }
}

constexpr KernelSet MakeSet(Isa isa) {
  return KernelSet{
      isa,
      {DotRows<kWF32>, DotRows<kWF16>, DotRows<kWBF16>, DotRows<kWQ8_0>, DotRows<kWQ4_0>,
       DotRows<kWQ4_1>, DotRowsQ4_KScalar, DotRowsQ5_KScalar, DotRowsQ6_KScalar, DotRowsQ2_KScalar,
       DotRowsQ3_KScalar},
      {Dequant<kWF32>, Dequant<kWF16>, Dequant<kWBF16>, Dequant<kWQ8_0>, Dequant<kWQ4_0>,
       Dequant<kWQ4_1>, DequantQ4_KScalar, DequantQ5_KScalar, DequantQ6_KScalar, DequantQ2_KScalar,
       DequantQ3_KScalar},
      kMr,
      kNr,
      Gemm,
      nullptr,
  };
}

constexpr KernelSet kNeon = MakeSet(Isa::kNeon);
constexpr KernelSet kNeonDotprod = MakeSet(Isa::kNeonDotprod);

}  // namespace

const KernelSet* NeonKernelSet() { return &kNeon; }
const KernelSet* NeonDotprodKernelSet() { return &kNeonDotprod; }

}  // namespace jisu::matmul_internal

#else  // not AArch64

namespace jisu::matmul_internal {
const KernelSet* NeonKernelSet() { return nullptr; }
const KernelSet* NeonDotprodKernelSet() { return nullptr; }
}  // namespace jisu::matmul_internal

#endif
