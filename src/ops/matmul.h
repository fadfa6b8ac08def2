// Matrix multiplication of activations by a weight matrix stored in any supported type:
//   y[t, o] = sum_i x[t, i] * W[o, i]      (x: [num_tokens, in], W: [out, in], y: [num_tokens,
//   out])
// This is the operation of every linear layer (PyTorch's x @ W.T). Three numerics:
//  - F32/F16/BF16 weights (and quantized weights on MatmulPath::kFloat): weights expanded to
//    float in registers, float activations; equals the float computation on the dequantized
//    weights up to summation order.
//  - Q8_0/Q4_0/Q4_1 weights (default): activations quantized once per call to int8 blocks of
//    32 (ops/act_quant.h) and integer block dot products (ops/matmul_int.h); differs from the
//    float computation by the activation rounding, |err| <= sum_i |W[o, i]| * d_block(i) / 2.
//  - F16/BF16 weights with their interleaved copy on CPUs with AVX512_BF16 (default; off on
//    MatmulPath::kFloat): weights and activations rounded to bf16, exact products, fp32 sums;
//    |err| <= 2^-7 * sum_i |W[o, i] x[i]|; a token's outputs do not depend on the step's
//    token count (ops/matmul_bf16.h).
// Multithreaded over output rows (decode) or tiles (prefill) on the given pool; no heap
// allocation per call beyond the pool's own reusable scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "core/function_ref.h"
#include "core/thread_pool.h"
#include "jisu/request_options.h"

namespace jisu {

struct WeightMatrix {
  DType dtype = DType::kF32;
  const void* data = nullptr;  // row-major [rows, cols] in dtype's layout
  int64_t rows = 0;            // output features
  int64_t cols = 0;            // input features (multiple of the block size)
  size_t row_bytes = 0;        // bytes per row (RowBytes(dtype, cols))
  // Optional (Q8_0/Q4_0/Q4_1): the integer GEMM's weight panels of this matrix, packed once by
  // PackIntPanels, so that steps of many tokens skip packing them on every call. Null: packed
  // per call from `data`. Decode (one token) always reads `data`. The CPU backend leaves it
  // null: on AVX2 it gained 3-10% for Q8_0 and nothing for Q4_0/Q4_1, whose panels are twice
  // the matrix's bytes (bench/results/2026-12-01-cpu-prepack.md).
  const uint8_t* int_panels = nullptr;
  // Optional (Q4_0/Q4_1/Q8_0/F16/BF16): the same weights repacked by InterleaveWeights into
  // groups of 16 rows (ops/matmul_interleaved.h). Where the CPU has the kernels that read it
  // (AVX-512 or AVX2), every call of the kind's own path reads it instead
  // of `data`: decode steps through its own kernels (integer types up to 63 tokens, F16/BF16
  // up to 19), longer steps through GEMM panels packed from it. `data` stays valid and is read
  // by the quantized types' float path (MatmulPath::kFloat) and MatMulReference.
  const uint8_t* interleaved = nullptr;
  // F16/BF16: `interleaved` holds bf16 pairs (InterleavesToBf16 when the copy was made), read
  // in bf16 numerics; where those are off (or no kernel reads them), MatMul reads `data`.
  bool interleaved_bf16 = false;
};

// Bytes InterleaveWeights writes for `w` on this CPU: the matrix's own size for
// Q4_0/Q4_1/Q8_0/F16/BF16 (padded to whole groups of 16 rows; columns a multiple of 32) where
// MatMul would read the copy, else 0 (other types, or no kernel for it on this CPU: nothing
// gains from the copy there).
size_t InterleavedBytes(const WeightMatrix& w);
// Writes w's interleaved copy into `out` (InterleavedBytes(w) bytes, 64-byte aligned), split
// over the pool; for F16/BF16 in the bf16-pair layout where InterleavesToBf16(w, path).
void InterleaveWeights(const WeightMatrix& w, uint8_t* out, ThreadPool& pool,
                       MatmulPath path = MatmulPath::kAuto);
// True where InterleaveWeights writes w as bf16 pairs: F16/BF16 on a CPU with AVX512_BF16 when
// the copy is made for a path in bf16 numerics (not kFloat: the float kernels read f16 halves).
// A load makes one copy, for the engine's default path; calls on the other path still compute
// theirs, from `data`. Whoever sets w.interleaved sets w.interleaved_bf16 from this.
bool InterleavesToBf16(const WeightMatrix& w, MatmulPath path = MatmulPath::kAuto);

// Bytes PackIntPanels writes for `w`: 1280 per 32 rows x 32 columns (2x a Q4_0/Q4_1 matrix,
// 1.18x a Q8_0 one); 0 when w's type has no packed integer GEMM.
size_t IntPanelBytes(const WeightMatrix& w);
// Packs w's rows into the integer GEMM's panel layout, [row panel][block][1280 bytes], into
// `out` (IntPanelBytes(w) bytes, 64-byte aligned), split over the pool.
void PackIntPanels(const WeightMatrix& w, uint8_t* out, ThreadPool& pool);

// Writes rows [t0, t1) of the activations x that a product is about to read (a RMSNorm, a
// SwiGLU). Given to MatMul/MatMulMany, it runs inside the call's own pass over the activations
// where there is one (their int8 quantization: each thread produces the tokens it then
// quantizes), so the layer step before a product needs no parallel section of its own; on
// other paths it runs over the pool first. Either way every row of x is written before any is
// read, and holds what `produce` wrote after the call.
using ActProducer = FunctionRef<void(int64_t t0, int64_t t1)>;

// A product's own numerics, chosen by its callers (a model's layer program, the request's
// options) rather than by process-wide switches.
struct MatMulOptions {
  // Activations stay float32: no int8 quantization for the integer kernels, f16 (not bf16)
  // numerics for F16/BF16 weights. For inputs the quantized path measurably damages; overrides
  // `path`.
  bool float_activations = false;
  // The step's path (RequestOptions::matmul): kAuto = the measured per-shape choice.
  MatmulPath path = MatmulPath::kAuto;
};

// x: [num_tokens, w.cols] floats with row stride x_stride (elements);
// y: [num_tokens, w.rows] floats with row stride y_stride (elements).
void MatMul(const WeightMatrix& w, const float* x, int64_t x_stride, int64_t num_tokens, float* y,
            int64_t y_stride, ThreadPool& pool, const ActProducer* produce = nullptr,
            const MatMulOptions& options = {});

// One product of MatMulMany: y = x W^T, y with row stride y_stride (elements).
struct MatMulTarget {
  const WeightMatrix* w;
  float* y;
  int64_t y_stride;
};
// MatMul of the same activations by several matrices (a layer's q/k/v, its gate/up), each y
// bit-identical to MatMul's. Matrices of one type, depth and layout (up to 4) run as one
// parallel section: the activations are quantized or packed once, and the pool is waited for
// once instead of once per matrix (a decode step had ~8 such waits a layer). Others run one
// after another.
void MatMulMany(std::span<const MatMulTarget> targets, const float* x, int64_t x_stride,
                int64_t num_tokens, ThreadPool& pool, const ActProducer* produce = nullptr,
                const MatMulOptions& options = {});

// The instruction set MatMul runs on here ("avx512", "avx2", "scalar"), for logs.
const char* MatMulIsaName();

// Dot products of float rows with up to a few vectors, single-threaded, on the best ISA:
//   y[j * y_stride + r] = sum_{i < cols} x[j * x_stride + i] * rows[r * row_stride + i]
// for r < num_rows, j < num_x. Used by attention (query heads of one KV group against the
// keys of a cache block), where the caller already parallelizes.
void DotRowsF32(const float* rows, int64_t row_stride, int64_t cols, int64_t num_rows,
                const float* x, int64_t x_stride, int64_t num_x, float* y, int64_t y_stride);

// Straightforward reference (dequantize each row, double accumulation); tests only.
void MatMulReference(const WeightMatrix& w, const float* x, int64_t x_stride, int64_t num_tokens,
                     float* y, int64_t y_stride);

}  // namespace jisu
