// Internal to src/ops: the integer (activation-quantized) matmul path. Activations are
// quantized to int8 blocks of 32 (act_quant.h), weights stay in their Q8_0/Q4_0/Q4_1 blocks
// and every block pair contributes one integer dot product, scaled once:
//
//   weight value   = dw * (u - z) + m       u: an unsigned byte per element
//     Q8_0: u = q + 128, z = 128, m = 0;   Q4_0: u = nibble, z = 8, m = 0;
//     Q4_1: u = nibble,  z = 0,   m = min
//   block dot      = dw * da * (sum u*a - z * sum a) + m * da * sum a
//
// so the inner loop is u8 x s8 -> int32 (vpdpbusd; pmaddubsw + pmaddwd on AVX2, where Q8_0
// uses the sign trick instead because 255 * 127 * 2 overflows int16). Results differ from the
// float path by the activation rounding (<= d/2 per element), not by summation order only.
//
// K-quants (Q4_K, Q5_K, Q6_K; matmul_int_kquant.h) have decode dot kernels: their 256-element
// super-blocks hold 8 activation blocks, each with its own sub-block scale (two for Q6_K), so
// the scale joins the integer sum per block of 32 instead of the form above. A Q4_K or Q5_K
// sub-block is a Q4_1 block (dw = d * sc, m = -dmin * min; u up to 15 or 31), so their prefill
// packs into Q4_1 panels. Q6_K panels hold its signed values (q - 32) with the two scales of a
// 32-element block in the dw and m slots; the kernels sum each half block apart.
//
// Decode (IntDotFn) reads weight rows in place. Prefill (IntGemmFn) runs on panels of kIntNr
// rows packed once per task and reused by every token of the task:
//   per block b: u8 [8 groups of 4 elements][kIntNr rows][4], float dw[kIntNr], float m[kIntNr]
// so one 32-bit broadcast of 4 activation bytes meets 16 rows' 4 weight bytes per vpdpbusd.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/half.h"
#include "ops/act_quant.h"
#include "ops/matmul_kernels.h"
#include "ops/quant.h"

namespace jisu::matmul_internal {

constexpr int kIntNr = 32;
constexpr int64_t kIntPanelBlockBytes = 8 * kIntNr * 4 + 2 * kIntNr * 4;  // 1280

constexpr bool IsIntKind(WeightKind k) { return k == kWQ8_0 || k == kWQ4_0 || k == kWQ4_1; }
// K-quant kinds with integer decode kernels and a packed GEMM (Q4_K and Q5_K through Q4_1
// panels, Q6_K through signed panels).
constexpr bool IsIntKQuantKind(WeightKind k) { return k == kWQ4_K || k == kWQ5_K || k == kWQ6_K; }
constexpr int IntZeroPoint(WeightKind k) { return k == kWQ8_0 ? 128 : (k == kWQ4_0 ? 8 : 0); }
constexpr size_t IntBlockBytes(WeightKind k) {
  return k == kWQ8_0 ? sizeof(BlockQ8_0) : (k == kWQ4_0 ? sizeof(BlockQ4_0) : sizeof(BlockQ4_1));
}

// Block `blk` of kind K as u[32], dw and m (see above).
template <WeightKind K>
inline void DecodeIntBlock(const uint8_t* blk, uint8_t u[32], float* dw, float* m) {
  uint16_t h;
  std::memcpy(&h, blk, 2);
  *dw = F16ToF32(h);
  *m = 0.0f;
  if constexpr (K == kWQ8_0) {
    for (int i = 0; i < 32; ++i) u[i] = static_cast<uint8_t>(blk[2 + i] ^ 0x80);
  } else {
    const uint8_t* qs = blk + (K == kWQ4_1 ? 4 : 2);
    if constexpr (K == kWQ4_1) {
      std::memcpy(&h, blk + 2, 2);
      *m = F16ToF32(h);
    }
    for (int i = 0; i < 16; ++i) {
      u[i] = qs[i] & 0x0f;
      u[i + 16] = qs[i] >> 4;
    }
  }
}

// Any panel through a full-panel packer pack_full(w, row_bytes, nblocks, panel) (w at block 0
// of row 0, all kIntNr rows): a partial panel (the last rows of a matrix) through a copy whose
// missing rows hold blocks that pack to zero bytes and zero scales, so the vector packers need
// no per-row checks.
template <WeightKind K, class PackFull>
inline void PackPanelWith(const uint8_t* w, size_t row_bytes, int valid_rows, int64_t b0,
                          int64_t nblocks, uint8_t* panel, PackFull pack_full) {
  if (valid_rows == kIntNr) return pack_full(w + b0 * IntBlockBytes(K), row_bytes, nblocks, panel);
  constexpr size_t kBB = IntBlockBytes(K);
  constexpr int64_t kChunk = 8;  // blocks per copy
  constexpr size_t kCopyRowBytes = kChunk * kBB;
  uint8_t copy[kIntNr * kCopyRowBytes];
  uint8_t missing[kBB] = {};  // scale 0; Q8_0 values 0x80 (the packers flip them to 0)
  if constexpr (K == kWQ8_0) std::memset(missing + 2, 0x80, kBB - 2);
  for (int64_t c0 = 0; c0 < nblocks; c0 += kChunk) {
    const int64_t n = nblocks - c0 < kChunk ? nblocks - c0 : kChunk;
    for (int r = 0; r < kIntNr; ++r) {
      uint8_t* dst = copy + r * kCopyRowBytes;
      if (r < valid_rows) {
        std::memcpy(dst, w + static_cast<size_t>(r) * row_bytes + (b0 + c0) * kBB, n * kBB);
      } else {
        for (int64_t b = 0; b < n; ++b) std::memcpy(dst + b * kBB, missing, kBB);
      }
    }
    pack_full(copy, kCopyRowBytes, n, panel + c0 * kIntPanelBlockBytes);
  }
}

// Decode: for r < num_rows, t < num_tokens (1..kMaxDotTokens):
//   y[t * y_stride + r] = sum over blocks of row r (at w + r * row_bytes) . token t0 + t of a.
using IntDotFn = void (*)(const uint8_t* w, size_t row_bytes, int64_t num_rows,
                          const QuantizedActs& a, int64_t t0, int num_tokens, float* y,
                          int64_t y_stride);

// Prefill micro-kernel: tokens [t0, t0 + num_tokens) (num_tokens <= mr) x the kIntNr rows of a
// panel holding nblocks blocks starting at block b0 of the activations:
//   c[i * ldc + j] (+)= sum_blocks ... for i < num_tokens, j < valid_rows.
using IntGemmFn = void (*)(int64_t nblocks, const uint8_t* panel, const QuantizedActs& a,
                           int64_t t0, int num_tokens, int64_t b0, float* c, int64_t ldc,
                           int valid_rows, bool accumulate);

struct IntKernelSet {
  const char* name;
  IntDotFn dot[kNumWeightKinds];    // nullptr for float kinds
  IntGemmFn gemm[kNumWeightKinds];  // nullptr: prefill uses dot
  int mr;                           // tokens per GEMM call at most
  // The K-quant dot kernels' own set name where they come from another ISA (nullptr: name).
  const char* kquant_name = nullptr;
};

const IntKernelSet& ScalarIntKernels();
const IntKernelSet* Avx2IntKernels();        // nullptr where not compiled in
const IntKernelSet* Avx512VnniIntKernels();  // nullptr where not compiled in
// AArch64 (nullptr elsewhere): int8 x int8 products widened to int16 (any NEON CPU), and SDOT
// (the caller checks CpuFeatures::neon_dotprod).
const IntKernelSet* NeonIntKernels();
const IntKernelSet* NeonDotprodIntKernels();

// The integer kernels that go with an ISA's float kernels on this CPU (AVX-512 without VNNI
// gets the AVX2 ones; kNeonDotprod the SDOT ones, kNeon the widening ones).
const IntKernelSet& IntKernelsFor(Isa isa);

// Packs rows [0, valid_rows) (row r at w + r * row_bytes; missing rows zero) and blocks
// [b0, b0 + nblocks) into the panel layout above.
void PackIntPanel(WeightKind kind, const uint8_t* w, size_t row_bytes, int valid_rows, int64_t b0,
                  int64_t nblocks, uint8_t* panel);
// The same layout from the portable loops, and from AVX-512 or AVX2 (return false where not
// compiled in or not on this CPU); PackIntPanel uses the fastest. Byte-identical (tests compare
// them).
void PackIntPanelPortable(WeightKind kind, const uint8_t* w, size_t row_bytes, int valid_rows,
                          int64_t b0, int64_t nblocks, uint8_t* panel);
bool PackIntPanelAvx512(WeightKind kind, const uint8_t* w, size_t row_bytes, int valid_rows,
                        int64_t b0, int64_t nblocks, uint8_t* panel);
bool PackIntPanelAvx2(WeightKind kind, const uint8_t* w, size_t row_bytes, int valid_rows,
                      int64_t b0, int64_t nblocks, uint8_t* panel);

// The activation path of one call (MatMulOptions: a layer program's or a request's choice);
// nullopt = the measured defaults: integer for prefill (more than kMaxDotTokens tokens), float
// for decode (the integer dot kernels did not beat the float ones on decode, which is
// memory-bound). kFloat: float throughout; kInt8: integer for decode too. No process-wide
// switch: two requests in one process may take different paths.
enum class ActPath { kFloat, kInt8 };
bool UseIntPath(int64_t num_tokens, std::optional<ActPath> call = std::nullopt);
// K-quants (IsIntKQuantKind) where the ISA's IntKernelSet has a dot kernel: integer dot for up
// to kKQuantIntDotMaxTokens tokens (in groups of kMaxDotTokens), the float GEMM above (its
// switch point in matmul.cc is kKQuantIntDotMaxTokens + 1). Zen 3, 5632 x 2048, 1 thread: the
// integer dot took 0.35-0.45x the float dot's time at 1, 4 and 12 tokens and 0.77x the float
// GEMM's at 24 tokens, mixed at 48 (bench/results/2026-12-01-cpu-kquant-int-avx2.md); prefill
// stays on the float GEMM. A call's kFloat / kInt8 as for UseIntPath.
// Q4_K also has the packed GEMM (its sub-blocks are Q4_1 blocks: PackIntPanel), so it stays
// on the integer path at every token count (dot to kKQuantIntDotMaxTokens, then the GEMM): Zen 3,
// 5632 x 2048, 1 thread, 24 / 32 / 128 tokens 1.25x / 1.3x / 1.45-1.65x the float GEMM; TinyLlama
// Q4_K_M pp512 at 2 threads 1.6x (bench/results/2026-12-01-cpu-q4_k-gemm.md).
constexpr int64_t kKQuantIntDotMaxTokens = 19;
bool UseIntKQuantPath(WeightKind kind, std::optional<ActPath> call = std::nullopt);
// Batch-1 decode through the integer GEMV (matmul_gemv.h) for Q4_0/Q8_0: on by default
// (measured faster on the TinyLlama-1.1B shape, bench/results/2026-12-01-cpu-decode.md); off
// for a kFloat call.
bool UseIntGemv(std::optional<ActPath> call = std::nullopt);

}  // namespace jisu::matmul_internal
