// Portable K-quant kernels: expand one 256-element super-block with the reference
// dequantizer, then multiply it with each token's activations. Also the fallback the vector
// kernels are compared with.
#include <algorithm>

#include "core/dtype.h"
#include "ops/matmul_kernels.h"
#include "ops/matmul_kernels_kquant.h"
#include "ops/quant.h"
#include "ops/quant_k.h"

namespace jisu::matmul_internal {
namespace {

template <DType T>
void DotRows(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows, const float* x,
             int64_t x_stride, int num_tokens, float* y, int64_t y_stride) {
  const int64_t kBlockBytes = Traits(T).block_bytes;
  const int64_t nb = cols / kQK_K;
  float wf[kQK_K];
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
    float acc[kMaxDotTokens][8] = {};
    for (int64_t b = 0; b < nb; ++b) {
      DequantizeRow(T, row + b * kBlockBytes, wf, kQK_K);
      for (int t = 0; t < num_tokens; ++t) {
        const float* xt = x + t * x_stride + b * kQK_K;
        for (int i = 0; i < kQK_K; ++i) acc[t][i % 8] += wf[i] * xt[i];
      }
    }
    for (int t = 0; t < num_tokens; ++t) {
      float s = 0.0f;
      for (int j = 0; j < 8; ++j) s += acc[t][j];
      y[t * y_stride + r] = s;
    }
  }
}

}  // namespace

void DotRowsQ4_KScalar(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows,
                       const float* x, int64_t x_stride, int num_tokens, float* y,
                       int64_t y_stride) {
  DotRows<DType::kQ4_K>(w, row_bytes, cols, num_rows, x, x_stride, num_tokens, y, y_stride);
}
void DotRowsQ5_KScalar(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows,
                       const float* x, int64_t x_stride, int num_tokens, float* y,
                       int64_t y_stride) {
  DotRows<DType::kQ5_K>(w, row_bytes, cols, num_rows, x, x_stride, num_tokens, y, y_stride);
}
void DotRowsQ6_KScalar(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows,
                       const float* x, int64_t x_stride, int num_tokens, float* y,
                       int64_t y_stride) {
  DotRows<DType::kQ6_K>(w, row_bytes, cols, num_rows, x, x_stride, num_tokens, y, y_stride);
}
void DotRowsQ2_KScalar(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows,
                       const float* x, int64_t x_stride, int num_tokens, float* y,
                       int64_t y_stride) {
  DotRows<DType::kQ2_K>(w, row_bytes, cols, num_rows, x, x_stride, num_tokens, y, y_stride);
}
void DotRowsQ3_KScalar(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows,
                       const float* x, int64_t x_stride, int num_tokens, float* y,
                       int64_t y_stride) {
  DotRows<DType::kQ3_K>(w, row_bytes, cols, num_rows, x, x_stride, num_tokens, y, y_stride);
}
void DequantQ2_KScalar(const uint8_t* src, float* dst, int64_t n) {
  DequantizeRow(DType::kQ2_K, src, dst, n);
}
void DequantQ3_KScalar(const uint8_t* src, float* dst, int64_t n) {
  DequantizeRow(DType::kQ3_K, src, dst, n);
}
void DequantQ4_KScalar(const uint8_t* src, float* dst, int64_t n) {
  DequantizeRow(DType::kQ4_K, src, dst, n);
}
void DequantQ5_KScalar(const uint8_t* src, float* dst, int64_t n) {
  DequantizeRow(DType::kQ5_K, src, dst, n);
}
void DequantQ6_KScalar(const uint8_t* src, float* dst, int64_t n) {
  DequantizeRow(DType::kQ6_K, src, dst, n);
}

}  // namespace jisu::matmul_internal
