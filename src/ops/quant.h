// Block formats shared with GGUF (bit-exact layouts) and the row conversions between them and
// float. These are the reference definitions every faster kernel is tested against.
//   Q8_0: 32 values = f16 scale d, 32 x int8 q;            x = d * q
//   Q4_0: 32 values = f16 scale d, 16 bytes of nibbles;    x = d * (nibble - 8)
//   Q4_1: 32 values = f16 scale d, f16 min m, 16 bytes;    x = d * nibble + m
// Nibble order (as GGUF): byte j holds element j in its low nibble and element j+16 in its
// high nibble.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace jisu {

constexpr int kQK = 32;  // elements per Q8_0/Q4_0/Q4_1 block

struct BlockQ8_0 {
  uint16_t d;  // f16
  int8_t qs[kQK];
};
struct BlockQ4_0 {
  uint16_t d;  // f16
  uint8_t qs[kQK / 2];
};
struct BlockQ4_1 {
  uint16_t d;  // f16
  uint16_t m;  // f16
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);

// True for the types DequantizeRow/QuantizeRow handle: F32, F16, BF16, Q8_0, Q4_0, Q4_1 and
// the K-quants Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (ops/quant_k.h).
bool IsSupportedWeightType(DType dtype);

// Q5_0 blocks (f16 scale d, 5-bit q: value (q - 16) * d) rewritten as Q8_0 blocks with the same
// d and q - 16 in [-16, 15]: the values are identical, and the fast Q8_0 kernels run them.
// Loaders widen Q5_0 tensors this way (1.55x their bytes). src: 22-byte blocks, dst: 34-byte.
void WidenQ5_0ToQ8_0(const uint8_t* src, BlockQ8_0* dst, int64_t num_blocks);

// Converts `n` elements of a row stored as `dtype` to float. n must be a multiple of the
// type's block size.
void DequantizeRow(DType dtype, const void* src, float* dst, int64_t n);

// Converts `n` floats to `dtype` (same types as DequantizeRow), rounding as GGUF's reference
// quantizers do, so files we write match files others write (K-quants: our own quantizer,
// valid blocks but not llama.cpp's bytes).
void QuantizeRow(DType dtype, const float* src, void* dst, int64_t n);

}  // namespace jisu
