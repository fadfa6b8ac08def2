// Portable kernels (any CPU): the fallback where no vector ISA is available, and the baseline
// the vector kernels are tested against. Written so the compiler can auto-vectorize the inner
// loops at the build's baseline ISA.
#include <cstring>

#include "core/half.h"
#include "ops/matmul_kernels.h"
#include "ops/matmul_kernels_kquant.h"
#include "ops/quant.h"

namespace jisu::matmul_internal {
namespace {

constexpr int kChunk = 32;  // elements expanded at a time (one quant block)

// Expands chunk `c` (32 elements) of a row into out[32].
template <WeightKind K>
inline void LoadChunk(const uint8_t* row, int64_t c, float* out) {
  if constexpr (K == kWF32) {
    std::memcpy(out, row + c * kChunk * 4, kChunk * 4);
  } else if constexpr (K == kWF16 || K == kWBF16) {
    uint16_t h[kChunk];
    std::memcpy(h, row + c * kChunk * 2, sizeof h);
    for (int i = 0; i < kChunk; ++i) out[i] = K == kWF16 ? F16ToF32(h[i]) : Bf16ToF32(h[i]);
  } else if constexpr (K == kWQ8_0) {
    DequantizeRow(DType::kQ8_0, row + c * sizeof(BlockQ8_0), out, kChunk);
  } else if constexpr (K == kWQ4_0) {
    DequantizeRow(DType::kQ4_0, row + c * sizeof(BlockQ4_0), out, kChunk);
  } else {
    DequantizeRow(DType::kQ4_1, row + c * sizeof(BlockQ4_1), out, kChunk);
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

template <WeightKind K>
void DotRows(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows, const float* x,
             int64_t x_stride, int num_tokens, float* y, int64_t y_stride) {
  const int64_t chunks = cols / kChunk;
  float wf[kChunk];
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
    // Eight partial sums per token keep the compiler free to vectorize.
    float acc[kMaxDotTokens][8] = {};
    for (int64_t c = 0; c < chunks; ++c) {
      LoadChunk<K>(row, c, wf);
      for (int t = 0; t < num_tokens; ++t) {
        const float* xt = x + t * x_stride + c * kChunk;
        for (int i = 0; i < kChunk; ++i) acc[t][i % 8] += wf[i] * xt[i];
      }
    }
    for (int t = 0; t < num_tokens; ++t) {
      float s = 0.0f;
      if constexpr (K == kWF32 || K == kWF16 || K == kWBF16) {
        for (int64_t i = chunks * kChunk; i < cols; ++i)
          s += LoadOne<K>(row, i) * x[t * x_stride + i];
      }
      for (int j = 0; j < 8; ++j) s += acc[t][j];
      y[t * y_stride + r] = s;
    }
  }
}

template <WeightKind K>
void Dequant(const uint8_t* src, float* dst, int64_t n) {
  const int64_t chunks = n / kChunk;
  for (int64_t c = 0; c < chunks; ++c) LoadChunk<K>(src, c, dst + c * kChunk);
  if constexpr (K == kWF32 || K == kWF16 || K == kWBF16) {
    for (int64_t i = chunks * kChunk; i < n; ++i) dst[i] = LoadOne<K>(src, i);
  }
}

constexpr int kMr = 4;
constexpr int kNr = 8;

void Gemm(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate) {
  float acc[kMr][kNr] = {};
  for (int64_t k = 0; k < kc; ++k, a += kMr, b += kNr) {
    for (int i = 0; i < kMr; ++i) {
      for (int j = 0; j < kNr; ++j) acc[i][j] += a[i] * b[j];
    }
  }
  for (int i = 0; i < kMr; ++i) {
    for (int j = 0; j < kNr; ++j) {
      c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
    }
  }
}

constexpr KernelSet kScalar = {
    Isa::kScalar,
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

}  // namespace

const KernelSet& ScalarKernelSet() { return kScalar; }

}  // namespace jisu::matmul_internal
