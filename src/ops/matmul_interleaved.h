// Internal to src/ops: weights repacked at load time into groups of 16 rows, the layouts the
// AVX-512 and AVX2 decode kernels read (matmul.h: WeightMatrix::interleaved). Integer kinds
// (Q4_0 / Q4_1 / Q8_0, read with VNNI or vpmaddubsw on quantized activations) and float kinds
// (F16 / BF16) differ below.
//
// Integer kinds:
// Per group g of 16 rows (rows 16g .. 16g + 15; a last partial group is padded with rows of
// zero scale) and per 32-element block b, one record of the same size as 16 GGUF blocks:
//   - 16 f16 scales, row r at bytes 2r (32 bytes); Q4_1 then its 16 f16 minimums (32 bytes);
//   - Q4_0 / Q4_1: 4 chunks of 64 bytes; chunk j holds, at bytes 4r .. 4r + 3, bytes
//     4j .. 4j + 3 of row r's 16 packed bytes. Their low nibbles are elements 4j .. 4j + 3 and
//     their high nibbles elements 16 + 4j .. 16 + 4j + 3 (u = nibble; Q4_0 zero point 8):
//     288 bytes (Q4_1: 320).
//   - Q8_0: 8 chunks of 64 bytes; chunk j holds bytes 4j .. 4j + 3 of row r's values, stored
//     as u = q + 128 (zero point 128, so vpdpbusd takes them as its unsigned operand):
//     544 bytes.
// Records run b = 0 .. blocks - 1 within a group, groups one after the other, so one group's
// weights are one sequential stream. A vpdpbusd with 4 activation bytes broadcast to every lane
// then serves 16 rows x 4 elements, and the 16 scales are one f16 load: about a quarter of the
// instructions per weight byte of the GGUF-row GEMV (matmul_gemv.h), which was compute-bound
// below the memory bandwidth on Zen 4.
//
// Prefill packs the integer GEMM's panels (matmul_int.h) from this layout, so a matrix
// repacked this way is only read here (the GGUF rows stay for the float path and tests).
//
// Float kinds (F16 / BF16): per group and 32-column block, a record of 16 row pieces of 64
// bytes (row r's 32 values at bytes 64r; padding rows zero), records in column order. The
// one-row decode dot slowed with the row length on Zen 4 (2048 x C, one thread: 20.7 GB/s at
// C = 2048, 10.2 at 8192): the float activation row left L1 beside the weight stream. Here a
// block's 32 activations stay in two registers for 16 rows, so they are read once per 16 rows
// (bench/probes/f16_interleave_probe.cc: 1.4-1.5x on 2048 x 5632, >= 1.0x on 2048 columns).
// The float GEMM packs its panels from this layout too (a row piece is 32 contiguous values).
//
// Float kinds in bf16 numerics (matmul_bf16.h, where UseBf16Numerics() holds at load): per
// group, [column pair p][16 rows] 32-bit words, row r's columns 2p and 2p + 1 rounded to bf16
// (low half, high half); padding rows zero. The same bytes per group as the halves layout. One
// 64-byte load is an operand of vdpbf16ps for 16 rows, whose lanes are the rows: the decode dot
// needs no reduction across lanes, and the bf16 GEMM reads two groups as its 32-row panel in
// place (no packing).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/act_quant.h"
#include "ops/matmul_kernels.h"

namespace jisu::matmul_internal {

constexpr int kIlRows = 16;
constexpr bool IsIlIntKind(WeightKind k) { return k == kWQ4_0 || k == kWQ4_1 || k == kWQ8_0; }
constexpr bool IsIlFloatKind(WeightKind k) { return k == kWF16 || k == kWBF16; }
constexpr bool IsInterleavedKind(WeightKind k) { return IsIlIntKind(k) || IsIlFloatKind(k); }
// Integer kinds: bytes of a record before its chunks (scales, Q4_1 minimums too).
constexpr size_t IlHeaderBytes(WeightKind k) { return k == kWQ4_1 ? 64 : 32; }
constexpr int IlChunks(WeightKind k) { return k == kWQ8_0 ? 8 : 4; }
constexpr size_t IlRecordBytes(WeightKind k) {
  return IsIlFloatKind(k) ? kIlRows * 64 : IlHeaderBytes(k) + 64 * IlChunks(k);
}
// Float kinds: the 32 values of row r, block b in the copy of a matrix with `blocks` blocks.
inline const uint8_t* IlFloatPiece(const uint8_t* il, int64_t blocks, int64_t r, int64_t b) {
  return il + static_cast<size_t>((r / kIlRows * blocks + b) * kIlRows + r % kIlRows) * 64;
}

// Bytes of the interleaved copy of a rows x cols matrix (0 for other kinds).
size_t InterleavedBytes(WeightKind kind, int64_t rows, int64_t cols);
// Groups [g0, g1) of the matrix (row r at w + r * row_bytes, `rows` rows, cols / 32 blocks)
// into out (the whole copy; group g at out + g * blocks * IlRecordBytes(kind)); float kinds in
// the bf16-pair layout when bf16_pairs.
void InterleaveGroups(WeightKind kind, const uint8_t* w, size_t row_bytes, int64_t rows,
                      int64_t cols, int64_t g0, int64_t g1, uint8_t* out, bool bf16_pairs = false);

// Decode: for rows [16 * g0, min(rows, 16 * g1)) and tokens t0 .. t0 + num_tokens - 1
// (num_tokens 1 .. kMaxDotTokens) of a:
//   y[t * y_stride + r] = row r . token t0 + t
// il: the whole interleaved copy (blocks = a.cols / 32 per row).
using IlDotFn = void (*)(const uint8_t* il, int64_t rows, int64_t g0, int64_t g1,
                         const QuantizedActs& a, int64_t t0, int num_tokens, float* y,
                         int64_t y_stride);
// The AVX-512 VNNI kernel, or nullptr (other kinds, not compiled in, not on this CPU).
IlDotFn Avx512VnniIlDot(WeightKind kind);
// The AVX2 kernel (vpmaddubsw; bit-identical to the VNNI one), or nullptr.
IlDotFn Avx2IlDot(WeightKind kind);
// The kernel that goes with an ISA's float kernels on this CPU (AVX-512: the VNNI one where
// the CPU has VNNI, else the AVX2 one), or nullptr.
IlDotFn IlDotFor(Isa isa, WeightKind kind);

// Float kinds, decode: for rows [16 * g0, min(rows, 16 * g1)) and tokens 0 .. num_tokens - 1
// (1 .. kMaxDotTokens) of x (cols = blocks * 32 floats a token, row stride x_stride):
//   y[t * y_stride + r] = row r . x[t]
// Bit-identical whatever num_tokens (one accumulator a row and token, one summation order).
using FloatIlDotFn = void (*)(const uint8_t* il, int64_t rows, int64_t blocks, int64_t g0,
                              int64_t g1, const float* x, int64_t x_stride, int num_tokens,
                              float* y, int64_t y_stride);
FloatIlDotFn Avx512FloatIlDot(WeightKind kind);
FloatIlDotFn Avx2FloatIlDot(WeightKind kind);
FloatIlDotFn FloatIlDotFor(Isa isa, WeightKind kind);
void FloatIlDotPortable(WeightKind kind, const uint8_t* il, int64_t rows, int64_t blocks,
                        int64_t g0, int64_t g1, const float* x, int64_t x_stride, int num_tokens,
                        float* y, int64_t y_stride);

// True where an ISA on this CPU has a kernel that reads `kind`'s interleaved copy; otherwise
// nothing reads it and none is made. The one place that decides whether a kind has the layout
// on this machine (MatMul, InterleavedBytes, kernel names).
bool HasIlLayout(Isa isa, WeightKind kind);
// The same arithmetic in portable code (tests compare the two; no machine decodes with it).
void IlDotPortable(WeightKind kind, const uint8_t* il, int64_t rows, int64_t g0, int64_t g1,
                   const QuantizedActs& a, int64_t t0, int num_tokens, float* y, int64_t y_stride);

// The integer GEMM panel (matmul_int.h: kIntNr = 32 rows, blocks [b0, b0 + nblocks)) of rows
// [r0, r0 + valid_rows), r0 a multiple of 32 and valid_rows = min(32, rows - r0), from the
// interleaved copy of a matrix with `blocks` blocks per row. Byte-identical to PackIntPanel on
// the GGUF rows.
void PackIntPanelFromIl(WeightKind kind, const uint8_t* il, int64_t blocks, int64_t r0,
                        int valid_rows, int64_t b0, int64_t nblocks, uint8_t* panel);

}  // namespace jisu::matmul_internal
