// Integer-path plumbing shared by every ISA: weight panel packing, kernel choice, path switch.
#include "ops/matmul_int.h"

#include <type_traits>

#include "core/half.h"
#include "ops/cpu_features.h"
#include "ops/matmul_bf16.h"
#include "ops/quant_k.h"

namespace jisu::matmul_internal {
namespace {

// Fills panel blocks b0 .. b0 + nblocks - 1 of kIntNr weight rows. decode(row, block, u, &s0, &s1)
// writes one row's 32 values of that 32-element block and the two per-block floats (the panel's
// dw and m slots); rows past valid_rows stay zero, so the kernels need no edge cases.
template <typename DecodeRow>
void PackRows(const uint8_t* w, size_t row_bytes, int valid_rows, int64_t b0, int64_t nblocks,
              uint8_t* panel, DecodeRow decode) {
  for (int64_t b = 0; b < nblocks; ++b) {
    uint8_t* pb = panel + b * kIntPanelBlockBytes;
    auto* s0 = reinterpret_cast<float*>(pb + 8 * kIntNr * 4);
    float* s1 = s0 + kIntNr;
    for (int r = 0; r < kIntNr; ++r) {
      uint8_t u[32] = {};
      s0[r] = s1[r] = 0.0f;
      if (r < valid_rows) decode(w + static_cast<size_t>(r) * row_bytes, b0 + b, u, &s0[r], &s1[r]);
      for (int g = 0; g < 8; ++g) std::memcpy(pb + (g * kIntNr + r) * 4, u + 4 * g, 4);
    }
  }
}

template <WeightKind K>
void PackT(const uint8_t* w, size_t row_bytes, int valid_rows, int64_t b0, int64_t nblocks,
           uint8_t* panel) {
  PackRows(w, row_bytes, valid_rows, b0, nblocks, panel,
           [](const uint8_t* row, int64_t b, uint8_t* u, float* dw, float* m) {
             DecodeIntBlock<K>(row + b * IntBlockBytes(K), u, dw, m);
           });
}

// Q4_K and Q5_K into the Q4_1 panel layout: each 32-element sub-block j of a 256-element
// super-block is x = (d * sc_j) * q - dmin * m_j, i.e. a Q4_1 block with dw = d * sc_j and min
// -dmin * m_j, so the Q4_1 micro-kernels compute it (Q5_K's q up to 31 needs the AVX2 kernel's
// int16 sums widened twice a block; matmul_int_avx2.cc). The nibbles of sub-blocks 2k and
// 2k + 1 share the 32 bytes qs[32k ..]: low for 2k, high for 2k + 1; Q5_K's fifth bit of
// element i of sub-block j is bit j of qh[i].
template <WeightKind K>
void PackKQuantAsQ4_1(const uint8_t* w, size_t row_bytes, int valid_rows, int64_t b0,
                      int64_t nblocks, uint8_t* panel) {
  using Block = std::conditional_t<K == kWQ4_K, BlockQ4_K, BlockQ5_K>;
  PackRows(w, row_bytes, valid_rows, b0, nblocks, panel,
           [](const uint8_t* row, int64_t b, uint8_t* u, float* dw, float* m) {
             const Block* blk = reinterpret_cast<const Block*>(row) + b / 8;
             const int j = static_cast<int>(b % 8);
             int sc, mn;
             UnpackScaleMinK4(blk->scales, j, &sc, &mn);
             *dw = F16ToF32(blk->d) * static_cast<float>(sc);
             *m = -(F16ToF32(blk->dmin) * static_cast<float>(mn));
             const uint8_t* q = blk->qs + 32 * (j / 2);
             for (int i = 0; i < 32; ++i) u[i] = (q[i] >> (4 * (j % 2))) & 15;
             if constexpr (K == kWQ5_K) {
               for (int i = 0; i < 32; ++i) u[i] |= ((blk->qh[i] >> j) & 1) << 4;
             }
           });
}

// Q6_K into the panel layout with signed values: sub-block j (32 elements) of a 256-element
// super-block holds w = q - 32 (-32..31, stored as int8 bytes) under two scales, d * sc[2j] for
// elements 0-15 (groups 0-3) in the dw slot and d * sc[2j + 1] for 16-31 (groups 4-7) in the m
// slot; the kernels sum each half block on its own. Element 32j + i sits in ql / qh as
// DequantizeQ6_K (quant_k.cc) reads it.
void PackQ6_K(const uint8_t* w, size_t row_bytes, int valid_rows, int64_t b0, int64_t nblocks,
              uint8_t* panel) {
  PackRows(w, row_bytes, valid_rows, b0, nblocks, panel,
           [](const uint8_t* row, int64_t b, uint8_t* u, float* dw_lo, float* dw_hi) {
             const BlockQ6_K* blk = reinterpret_cast<const BlockQ6_K*>(row) + b / 8;
             const int j = static_cast<int>(b % 8);
             const int h = j / 4, k = j % 4;
             const float d = F16ToF32(blk->d);
             *dw_lo = d * static_cast<float>(blk->scales[2 * j]);
             *dw_hi = d * static_cast<float>(blk->scales[2 * j + 1]);
             const uint8_t* ql = blk->ql + 64 * h + 32 * (k % 2);
             const uint8_t* qh = blk->qh + 32 * h;
             for (int i = 0; i < 32; ++i) {
               const int q = ((ql[i] >> (4 * (k / 2))) & 15) | (((qh[i] >> (2 * k)) & 3) << 4);
               u[i] = static_cast<uint8_t>(static_cast<int8_t>(q - 32));
             }
           });
}

}  // namespace

const IntKernelSet& IntKernelsFor(Isa isa) {
  if (isa == Isa::kAvx512 && GetCpuFeatures().avx512_vnni && Avx512VnniIntKernels() != nullptr) {
    return *Avx512VnniIntKernels();
  }
  if ((isa == Isa::kAvx512 || isa == Isa::kAvx2) && Avx2IntKernels() != nullptr) {
    return *Avx2IntKernels();
  }
  if (isa == Isa::kNeonDotprod && NeonDotprodIntKernels() != nullptr) {
    return *NeonDotprodIntKernels();
  }
  if (isa == Isa::kNeon && NeonIntKernels() != nullptr) return *NeonIntKernels();
  return ScalarIntKernels();
}

void PackIntPanel(WeightKind kind, const uint8_t* w, size_t row_bytes, int valid_rows, int64_t b0,
                  int64_t nblocks, uint8_t* panel) {
  // The layout is the same for every ISA's kernels, so the vector packer serves them all.
  if (PackIntPanelAvx512(kind, w, row_bytes, valid_rows, b0, nblocks, panel)) return;
  if (PackIntPanelAvx2(kind, w, row_bytes, valid_rows, b0, nblocks, panel)) return;
  PackIntPanelPortable(kind, w, row_bytes, valid_rows, b0, nblocks, panel);
}

void PackIntPanelPortable(WeightKind kind, const uint8_t* w, size_t row_bytes, int valid_rows,
                          int64_t b0, int64_t nblocks, uint8_t* panel) {
  switch (kind) {
    case kWQ8_0:
      return PackT<kWQ8_0>(w, row_bytes, valid_rows, b0, nblocks, panel);
    case kWQ4_0:
      return PackT<kWQ4_0>(w, row_bytes, valid_rows, b0, nblocks, panel);
    case kWQ4_1:
      return PackT<kWQ4_1>(w, row_bytes, valid_rows, b0, nblocks, panel);
    case kWQ4_K:
      return PackKQuantAsQ4_1<kWQ4_K>(w, row_bytes, valid_rows, b0, nblocks, panel);
    case kWQ5_K:
      return PackKQuantAsQ4_1<kWQ5_K>(w, row_bytes, valid_rows, b0, nblocks, panel);
    case kWQ6_K:
      return PackQ6_K(w, row_bytes, valid_rows, b0, nblocks, panel);
    default:
      return;
  }
}

bool UseIntGemv(std::optional<ActPath> call) { return call != ActPath::kFloat; }

bool UseBf16Numerics(std::optional<ActPath> call) { return call != ActPath::kFloat; }

bool UseIntPath(int64_t num_tokens, std::optional<ActPath> call) {
  if (call) return *call == ActPath::kInt8;
  return num_tokens > kMaxDotTokens;
}

bool UseIntKQuantPath(WeightKind kind, std::optional<ActPath> call) {
  if (call) return *call == ActPath::kInt8;
  // Every K-quant kind has the dot kernels (few tokens) and a packed GEMM.
  return IsIntKQuantKind(kind);
}

}  // namespace jisu::matmul_internal
