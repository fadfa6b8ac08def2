// What the MatMul driver (matmul.cc) shares with the tasks it runs, for those files only: the
// Problem a task reads (one weight matrix of a call, its kernels and prepared activations), the
// packed-slice shape, the growable scratch buffer, and the task entry points: DotTask
// (matmul_decode.cc) and GemmTask with its activation packers (matmul_gemm.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include "ops/act_quant.h"
#include "ops/matmul_bf16.h"
#include "ops/matmul_gemv.h"
#include "ops/matmul_int.h"
#include "ops/matmul_interleaved.h"
#include "ops/matmul_kernels.h"

namespace jisu::matmul_internal {

constexpr int64_t kKc = 256;  // depth of a packed slice (multiple of every block size)
// Output rows per GEMM task at most: a multiple of the integer path's kIntNr; the float path
// uses the largest multiple of its nr below it (AVX2's nr is 24).
constexpr int64_t kNc = 128;
constexpr int64_t kMc = 96;  // tokens per packed activation block (multiple of every mr)

// Growable 64-byte-aligned float buffer; grows only, so steady-state calls never allocate.
class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { Free(); }

  float* Get(size_t n) {
    if (n > capacity_) {
      Free();
      data_ = static_cast<float*>(::operator new (n * sizeof(float), std::align_val_t{64}));
      capacity_ = n;
    }
    return data_;
  }

 private:
  void Free() {
    if (data_ != nullptr) ::operator delete (data_, std::align_val_t{64});
    data_ = nullptr;
    capacity_ = 0;
  }
  float* data_ = nullptr;
  size_t capacity_ = 0;
};

struct Problem {
  const KernelSet* ks;
  WeightKind kind;
  const uint8_t* w;
  size_t row_bytes;
  int64_t rows, cols;
  int64_t block_size, block_bytes;
  const float* x;
  int64_t x_stride, num_tokens;
  float* y;
  int64_t y_stride;
  const IntKernelSet* iks;  // non-null: integer path on qa
  QuantizedActs qa;
  // Float GEMM: every token's activations packed once per call (slice at pc: a_packed + pc *
  // tokens_padded, token panel at + t * kc) instead of once per task, which repeated the
  // packing for every row chunk. nullptr: pack per task (a single row chunk).
  const float* a_packed = nullptr;
  int64_t tokens_padded = 0;
  // Batch-1 integer GEMV (matmul_gemv.h): used by DotTask when set.
  matmul_internal::GemvFn gemv = nullptr;
  matmul_internal::GemvActs gacts{};
  const uint8_t* int_panels = nullptr;  // WeightMatrix::int_panels
  // WeightMatrix::interleaved where this call reads it: decode through il_dot (when set),
  // GEMM panels packed from it.
  const uint8_t* il = nullptr;
  matmul_internal::IlDotFn il_dot = nullptr;
  matmul_internal::FloatIlDotFn fil_dot = nullptr;  // float kinds' decode on `il`
  // F16/BF16 in bf16 numerics (matmul_bf16.h) on `il`'s pairs. Prefill: the GEMM, every
  // token's activations packed once per call as pairs (slice at pc: a_pairs + pc / 2 *
  // tokens_padded, token panel at + t * kc / 2). Decode: the dot, on the tokens' activations
  // as pairs (token t at a_pairs + t * cols / 2).
  matmul_internal::Bf16GemmFn bf16_gemm = nullptr;
  matmul_internal::Bf16IlDotFn bf16_dot = nullptr;
  const uint32_t* a_pairs = nullptr;
};

// ---- Tasks (each runs on one pool thread)

// matmul_decode.cc: output rows [r0, r1) for every token.
void DotTask(const Problem& p, int64_t r0, int64_t r1);
// matmul_gemm.cc: output rows [o0, o0 + nc) for tokens [tb, te), through packed panels.
void GemmTask(const Problem& p, int64_t o0, int64_t nc, int64_t tb, int64_t te);
// matmul_gemm.cc: the activation packers, which the driver also runs once per call for every
// task (Problem::a_packed, Problem::a_pairs).
void PackActivationsBf16(const Problem& p, int64_t tokens_padded, int64_t pc, int64_t kc,
                         uint32_t* a);
void PackActivations(const Problem& p, int64_t t0, int64_t mc, int64_t pc, int64_t kc, float* a);

}  // namespace jisu::matmul_internal
