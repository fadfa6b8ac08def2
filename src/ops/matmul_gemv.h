// Internal to src/ops: the batch-1 (decode) integer GEMV for Q4_0 and Q8_0 weights (and Q4_1
// on AVX2).
//
// The activation row is quantized to int8 blocks of 32 once per MatMul (act_quant.h), then
// rearranged once more (GemvActs) so that the kernel's inner loop needs no shuffles:
//   - Q4_0: two weight blocks' 16 packed bytes broadcast into one zmm give the 128-bit chunks
//     [b low nibbles | b+1 low | b high | b+1 high]; the activations of each block pair are
//     stored in that chunk order (q4).
//   - Q8_0: two blocks' 32 bytes are one zmm in natural order (qn, a zero-padded copy).
// Per int32 lane (4 bytes) the zero point is folded into the vpdpbusd start value
// (off = -z * sum of the lane's 4 activations, exact in int32) and the activation scale of the
// lane's block is stored (da), so per block pair and row the kernel does: 2 loads, 1 vpdpbusd,
// one float scale of the lane sums and one FMA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/act_quant.h"
#include "ops/matmul_kernels.h"

namespace jisu::matmul_internal {

// One token's activations for the GEMV kernels; every array covers `pairs` = ceil(blocks / 2)
// block pairs (a missing odd block is zero: values, offsets and scales).
struct GemvActs {
  int64_t blocks = 0;
  int64_t pairs = 0;
  const int8_t* q4 = nullptr;     // [pairs][64], Q4_0 chunk order
  const int32_t* off4 = nullptr;  // [pairs][16], -8 * lane sums of q4
  const float* da4 = nullptr;     // [pairs][16], block scale per lane of q4
  const int8_t* qn = nullptr;     // [pairs][64], natural order
  const int32_t* off8 = nullptr;  // [pairs][16], -128 * lane sums of qn
  const float* dan = nullptr;     // [pairs][16], block scale per lane of qn
};

// Owns the storage; grows only.
class GemvActBuffer {
 public:
  GemvActBuffer() = default;
  GemvActBuffer(const GemvActBuffer&) = delete;
  GemvActBuffer& operator=(const GemvActBuffer&) = delete;
  ~GemvActBuffer();
  // Token t of `a` rearranged as above.
  GemvActs Prepare(const QuantizedActs& a, int64_t t);

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

// y[r] = row r (at w + r * row_bytes, acts.blocks blocks) . acts, for r < num_rows.
using GemvFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t num_rows, const GemvActs& acts,
                        float* y);

// The AVX-512 VNNI kernel for kind (kWQ4_0, kWQ8_0), or nullptr (other kinds, not compiled in,
// or not on this CPU).
GemvFn Avx512VnniGemv(WeightKind kind);
// The AVX2 kernel (pmaddubsw; matmul_gemv_avx2.cc) for kWQ4_0, kWQ8_0 and kWQ4_1 (read through
// the Q4_0 arrays), or nullptr as above.
GemvFn Avx2Gemv(WeightKind kind);

// The GEMV that goes with an ISA's float kernels on this CPU: AVX-512 VNNI, else AVX2 (also
// under AVX-512 without VNNI), else nullptr (scalar: the dot kernels decode). *name, when
// given, is set to the kernel's name for `jisu info`.
GemvFn GemvFor(Isa isa, WeightKind kind, const char** name = nullptr);
// The same arithmetic in portable code (tests compare the two).
void GemvPortable(WeightKind kind, const uint8_t* w, size_t row_bytes, int64_t num_rows,
                  const GemvActs& acts, float* y);

}  // namespace jisu::matmul_internal
