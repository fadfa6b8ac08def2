// Internal to src/ops: the BF16 dot-product GEMM for F16/BF16 weights in prefill, on CPUs with
// AVX512_BF16 (vdpbf16ps: two products a lane per instruction, twice the FP32 FMA rate).
// Weights and activations are rounded to bfloat16 (nearest even) as they are packed; products
// are exact in fp32 and accumulate in fp32. BF16 weights lose nothing; F16 weights and the
// activations keep 8 significant bits, like the int8 activation blocks of the quantized types'
// integer path (ops/matmul_int.h). Opt-in (UseBf16Gemm: JISU_MATMUL=bf16), because decode keeps
// the float kernels (memory-bound, nothing to gain) and a step's numerics must not depend on how
// many tokens share it.
//
// Panels hold pairs of consecutive k as one 32-bit word (bf16 of k in the low half, k + 1 in
// the high half): weights [k / 2][kBf16Nr rows], activations [k / 2][kBf16Mr tokens].
#pragma once

#include <cstdint>

namespace jisu::matmul_internal {

constexpr int kBf16Mr = 12;
constexpr int kBf16Nr = 32;

// c[i * ldc + j] = (accumulate ? c : 0) + sum_{p < pairs} a[p * kBf16Mr + i] . b[p * kBf16Nr + j]
// (each word a pair of bf16), i < kBf16Mr, j < kBf16Nr.
using Bf16GemmFn = void (*)(int64_t pairs, const uint32_t* a, const uint32_t* b, float* c,
                            int64_t ldc, bool accumulate);
// The AVX-512 BF16 kernel, or nullptr where the CPU (or the build) lacks it.
Bf16GemmFn Avx512Bf16Gemm();

// dst[i] = bf16(src[2i]) | bf16(src[2i + 1]) << 16 for i < n / 2 (n even), rounded to nearest
// even (NaN stays NaN). Portable (tests; tails).
void RoundToBf16Pairs(const float* src, int64_t n, uint32_t* dst);
// The same with vcvtne2ps2bf16, which also flushes denormals to zero; only where
// Avx512Bf16Gemm() is non-null (the packers of that GEMM).
void Avx512RoundToBf16Pairs(const float* src, int64_t n, uint32_t* dst);

}  // namespace jisu::matmul_internal
