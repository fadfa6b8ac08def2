// Internal to src/ops: float-activation kernels for the K-quant weight formats (Q2_K..Q6_K;
// layouts in ops/quant_k.h), one file per ISA (matmul_kernels_kquant_{scalar,avx2,
// avx512}.cc). The per-ISA KernelSet tables list these entries after the 32-element formats.
// Plain (non-template, no target attribute) functions so the constexpr tables in the other
// files can take their addresses; each forwards to the ISA-specific code in its own file.
#pragma once

#include <cstddef>
#include <cstdint>

namespace jisu::matmul_internal {

#define JISU_KQUANT_KERNELS(Fmt, Isa)                                                        \
  void DotRows##Fmt##Isa(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows, \
                         const float* x, int64_t x_stride, int num_tokens, float* y,         \
                         int64_t y_stride);                                                  \
  void Dequant##Fmt##Isa(const uint8_t* src, float* dst, int64_t n);

JISU_KQUANT_KERNELS(Q4_K, Scalar)
JISU_KQUANT_KERNELS(Q5_K, Scalar)
JISU_KQUANT_KERNELS(Q6_K, Scalar)
JISU_KQUANT_KERNELS(Q2_K, Scalar)  // Q2_K/Q3_K: every ISA table uses these
JISU_KQUANT_KERNELS(Q3_K, Scalar)
JISU_KQUANT_KERNELS(Q4_K, Avx2)
JISU_KQUANT_KERNELS(Q5_K, Avx2)
JISU_KQUANT_KERNELS(Q6_K, Avx2)
JISU_KQUANT_KERNELS(Q4_K, Avx512)
JISU_KQUANT_KERNELS(Q5_K, Avx512)
JISU_KQUANT_KERNELS(Q6_K, Avx512)

#undef JISU_KQUANT_KERNELS

}  // namespace jisu::matmul_internal
