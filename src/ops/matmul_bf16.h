// Internal to src/ops: bf16 numerics for F16/BF16 weights on CPUs with AVX512_BF16 (vdpbf16ps:
// two products a lane per instruction, twice the FP32 FMA rate). Weights and activations are
// rounded to bfloat16 (nearest even); products are exact in fp32 and accumulate in fp32. BF16
// weights lose nothing; F16 weights and the activations keep 8 significant bits, like the int8
// activation blocks of the quantized types' integer path (ops/matmul_int.h).
//
// The weights are read from the interleaved copy in its bf16-pair layout (matmul_interleaved.h:
// per group of 16 rows, [pair of columns][16 rows] 32-bit words, bf16 of column 2p in the low
// half, 2p + 1 in the high half), made at load where UseBf16Numerics() holds. Decode (the dot
// kernel below) and prefill (the GEMM) read the same words and sum in the same order: per
// kBf16SlicePairs-pair slice, one fp32 chain of vdpbf16ps over the slice's pairs from zero, then
// the slice's sum added to the running total (first slice: the total is the slice's sum). So a
// token's outputs are bit-identical whether it is alone or in a step of any size, on either
// path, with any thread count: continuous batching cannot change a request's tokens.
#pragma once

#include <cstdint>
#include <optional>

namespace jisu::matmul_internal {

enum class ActPath;  // matmul_int.h

// GEMM micro-tile: kBf16Mr tokens x kBf16Nr rows (two groups of 16 rows of the copy).
constexpr int kBf16Mr = 12;
constexpr int kBf16Nr = 32;
// Column pairs per summation slice (256 columns: the GEMM's packed slice depth, kKc).
constexpr int64_t kBf16SlicePairs = 128;

// c[i * ldc + j] = (accumulate ? c : 0) + sum_{p < pairs} a[p * kBf16Mr + i] . w[p][j] for
// i < kBf16Mr, j < kBf16Nr, where w[p][j] = b_lo[p * 16 + j] for j < 16 and b_hi[p * 16 + j - 16]
// above (each word a pair of bf16; the two groups of the copy, or b_hi = b_lo where the matrix
// ends after b_lo's group: those 16 columns of c are then not meaningful).
using Bf16GemmFn = void (*)(int64_t pairs, const uint32_t* a, const uint32_t* b_lo,
                            const uint32_t* b_hi, float* c, int64_t ldc, bool accumulate);
// The AVX-512 BF16 kernel, or nullptr where the CPU (or the build) lacks it.
Bf16GemmFn Avx512Bf16Gemm();

// Decode on the pair copy: for rows [16 * g0, min(rows, 16 * g1)) and tokens t < num_tokens
// (1 .. kMaxDotTokens), x_pairs holding token t's activations as pairs at t * xp_stride:
//   y[t * y_stride + r] = row r . token t     (pairs = columns / 2 per row)
using Bf16IlDotFn = void (*)(const uint32_t* il, int64_t rows, int64_t pairs, int64_t g0,
                             int64_t g1, const uint32_t* x_pairs, int64_t xp_stride, int num_tokens,
                             float* y, int64_t y_stride);
// Non-null exactly where Avx512Bf16Gemm() is.
Bf16IlDotFn Avx512Bf16IlDot();

// dst[i] = bf16(src[2i]) | bf16(src[2i + 1]) << 16 for i < n / 2 (n even), rounded to nearest
// even (NaN stays NaN). Portable (tests; tails; the load-time repack).
void RoundToBf16Pairs(const float* src, int64_t n, uint32_t* dst);
// The same with vcvtne2ps2bf16, which also flushes denormals to zero; only where
// Avx512Bf16Gemm() is non-null (activations of both kernels, so they see the same words).
void Avx512RoundToBf16Pairs(const float* src, int64_t n, uint32_t* dst);

// Policy: F16/BF16 weights take bf16 numerics where the CPU has the kernels. On by default:
// measured on Zen 4, TinyLlama-1.1B-shape F16 prefill 1.95x the float GEMM (2.0x llama.cpp);
// perplexity +0.007% on tiny-llama (tests/golden_test.cc), +0.055% on SmolLM2-135M requantized
// to F16 (bench/results/2026-12-03-cpu-bf16-numerics.md). Off for a kFloat call (exact float
// kernels on f16 weights, f32 activations: MatmulPath::kFloat).
bool UseBf16Numerics(std::optional<ActPath> call = std::nullopt);

}  // namespace jisu::matmul_internal
