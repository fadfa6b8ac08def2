// Internal to src/ops: the small interface between the MatMul driver (threading, tiling,
// packing, scratch; matmul.cc) and the instruction-set-specific inner loops. Each ISA
// (portable scalar, AVX2+FMA+F16C, AVX-512, AArch64 NEON) fills one KernelSet; the driver picks
// one at run time from the CPU's features. A new ISA or a new kind of kernel (integer VNNI dot
// products on quantized activations) is added by giving KernelSet another member and the
// driver a branch that uses it where present, without touching the other ISAs. The integer
// (activation-quantized) kernels live beside these in matmul_int.h (IntKernelSet per ISA).
//
// Invariants every float kernel keeps: activations and accumulators are float32; quantized weights
// are expanded to exactly the floats DequantizeRow produces (d * q products are exact, so
// fused or separate multiply-add gives the same value); so results differ from the reference
// only by summation order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/dtype.h"

namespace jisu::matmul_internal {

// Weight types MatMul handles, as dense indices into the KernelSet tables.
enum WeightKind : int {
  kWF32,
  kWF16,
  kWBF16,
  kWQ8_0,
  kWQ4_0,
  kWQ4_1,
  kWQ4_K,  // K-quants: kernels in matmul_kernels_kquant_*.cc
  kWQ5_K,
  kWQ6_K,
  kWQ2_K,  // Q2_K/Q3_K: the portable kernels on every ISA (not tuned)
  kWQ3_K,
  kNumWeightKinds
};
std::optional<WeightKind> WeightKindOf(DType dtype);

// Tokens one dot-kernel call handles at most (accumulators held in registers).
constexpr int kMaxDotTokens = 4;

// Decode kernel: for r < num_rows and t < num_tokens (1..kMaxDotTokens):
//   y[t * y_stride + r] = sum_{i < cols} x[t * x_stride + i] * W[r, i]
// where row r starts at w + r * row_bytes.
using DotRowsFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t cols, int64_t num_rows,
                           const float* x, int64_t x_stride, int num_tokens, float* y,
                           int64_t y_stride);

// Expands n elements of a weight row into floats. `src` points at the storage of the first
// element, which for block types is the start of a block; n is a multiple of the block size
// for block types and any count for F32/F16/BF16.
using DequantFn = void (*)(const uint8_t* src, float* dst, int64_t n);

// GEMM micro-kernel on packed panels:
//   c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0) + sum_{k < kc} a[k * mr + i] * b[k * nr + j]
// for i < mr, j < nr. `a` holds mr tokens' activations, k-major; `b` nr weight rows, k-major.
using GemmMicroFn = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                             bool accumulate);

// Transposes nr dequantized weight rows (row r at rows[r * kc], all nr rows present; the
// caller zero-fills missing ones) into a GEMM panel: panel[k * nr + r] = rows[r * kc + k].
using TransposePanelFn = void (*)(const float* rows, int64_t kc, float* panel);

// kNeon and kNeonDotprod share the float kernels; they differ in the integer ones (IntKernelsFor):
// the plain NEON set widens int8 products to int16, the other uses SDOT. Two ISAs rather than a
// CPU check inside one, so tests and benchmarks can force either on a CPU that has both.
enum class Isa { kScalar, kAvx2, kAvx512, kNeon, kNeonDotprod };
// Every ISA, for tests and benchmarks to walk (those not IsaAvailable here are skipped).
inline constexpr Isa kAllIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon,
                                   Isa::kNeonDotprod};
const char* IsaName(Isa isa);

struct KernelSet {
  Isa isa;
  DotRowsFn dot[kNumWeightKinds];
  DequantFn dequant[kNumWeightKinds];
  int mr;  // GEMM tile: tokens
  int nr;  // GEMM tile: output rows (a multiple of the vector width)
  GemmMicroFn gemm;
  TransposePanelFn transpose;  // nullptr: the driver's portable loop
};

// Each returns nullptr where the ISA is not compiled in (x86 sets on other architectures, NEON
// sets off AArch64); the caller checks the CPU before using a non-null set.
const KernelSet& ScalarKernelSet();
const KernelSet* Avx2KernelSet();
const KernelSet* Avx512KernelSet();
const KernelSet* NeonKernelSet();
const KernelSet* NeonDotprodKernelSet();  // the NEON float kernels, tagged kNeonDotprod

// True if `isa` is compiled in and this CPU/OS supports it.
bool IsaAvailable(Isa isa);

// The kernels MatMul uses: the best available ISA unless a test forced one.
const KernelSet& ActiveKernelSet();

// Tests and benchmarks: force an ISA (must be available) or the dot/GEMM path; nullopt
// restores automatic choice. Not thread-safe against concurrent MatMul calls.
void ForceIsa(std::optional<Isa> isa);
enum class Path { kDot, kGemm };
void ForcePath(std::optional<Path> path);
std::optional<Path> ForcedPath();

}  // namespace jisu::matmul_internal
