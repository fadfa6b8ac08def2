// Internal to src/ops: Q4_0 / Q4_1 / Q8_0 weights repacked at load time into groups of 16 rows, the
// layout the AVX-512 VNNI decode kernels read (matmul.h: WeightMatrix::interleaved).
//
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
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/act_quant.h"
#include "ops/matmul_kernels.h"

namespace jisu::matmul_internal {

constexpr int kIlRows = 16;
constexpr bool IsInterleavedKind(WeightKind k) { return k == kWQ4_0 || k == kWQ4_1 || k == kWQ8_0; }
// Bytes of a record before its chunks (scales, Q4_1 minimums too).
constexpr size_t IlHeaderBytes(WeightKind k) { return k == kWQ4_1 ? 64 : 32; }
constexpr int IlChunks(WeightKind k) { return k == kWQ8_0 ? 8 : 4; }
constexpr size_t IlRecordBytes(WeightKind k) { return IlHeaderBytes(k) + 64 * IlChunks(k); }

// Bytes of the interleaved copy of a rows x cols matrix (0 for other kinds).
size_t InterleavedBytes(WeightKind kind, int64_t rows, int64_t cols);
// Groups [g0, g1) of the matrix (row r at w + r * row_bytes, `rows` rows, cols / 32 blocks)
// into out (the whole copy; group g at out + g * blocks * IlRecordBytes(kind)).
void InterleaveGroups(WeightKind kind, const uint8_t* w, size_t row_bytes, int64_t rows,
                      int64_t cols, int64_t g0, int64_t g1, uint8_t* out);

// Decode: for rows [16 * g0, min(rows, 16 * g1)) and tokens t0 .. t0 + num_tokens - 1
// (num_tokens 1 .. kMaxDotTokens) of a:
//   y[t * y_stride + r] = row r . token t0 + t
// il: the whole interleaved copy (blocks = a.cols / 32 per row).
using IlDotFn = void (*)(const uint8_t* il, int64_t rows, int64_t g0, int64_t g1,
                         const QuantizedActs& a, int64_t t0, int num_tokens, float* y,
                         int64_t y_stride);
// The AVX-512 VNNI kernel, or nullptr (other kinds, not compiled in, not on this CPU).
IlDotFn Avx512VnniIlDot(WeightKind kind);
// The same arithmetic in portable code (tests compare the two; scalar fallback).
void IlDotPortable(WeightKind kind, const uint8_t* il, int64_t rows, int64_t g0, int64_t g1,
                   const QuantizedActs& a, int64_t t0, int num_tokens, float* y, int64_t y_stride);

// The integer GEMM panel (matmul_int.h: kIntNr = 32 rows, blocks [b0, b0 + nblocks)) of rows
// [r0, r0 + valid_rows), r0 a multiple of 32 and valid_rows = min(32, rows - r0), from the
// interleaved copy of a matrix with `blocks` blocks per row. Byte-identical to PackIntPanel on
// the GGUF rows.
void PackIntPanelFromIl(WeightKind kind, const uint8_t* il, int64_t blocks, int64_t r0,
                        int valid_rows, int64_t b0, int64_t nblocks, uint8_t* panel);

}  // namespace jisu::matmul_internal
