// The packed-panel GEMM tasks of MatMul (many tokens), per task = (a range of kNc output rows)
// x (a range of tokens):
//   for each kKc-deep slice of the input features:
//     dequantize + transpose the task's weight rows into a k-major panel (B, L2-resident)
//     for each kMc block of tokens: pack activations k-major (A), then run the mr x nr
//     micro-kernel over every (token panel, row panel) pair, accumulating into y.
// Each weight element is dequantized once per task and reused by every token of the task.
// Also the integer GEMM (int8 panels of kIntNr rows, packed per slice or prepacked) and the
// bf16 GEMM on the interleaved copy's pairs, and the activation packers the driver runs once
// per call. Tasks read a Problem (matmul_tasks.h).
#include <algorithm>
#include <cassert>
#include <cstring>

#include "ops/matmul_tasks.h"

namespace jisu::matmul_internal {
namespace {

// Integer path: blocks of 32 per packed slice (panels of kNc rows: kNc / kIntNr * 32 * 1280 B
// = 160 KiB, L2-resident).
constexpr int64_t kIntKcBlocks = 32;

// Per-thread scratch; the pool's threads live as long as the pool, so this is allocated once
// per thread and reused by every call.
struct ThreadScratch {
  ScratchBuffer b_pack;    // kNc x kKc dequantized weights, [nc/nr][kc][nr]
  ScratchBuffer a_pack;    // kMc x kKc activations, [mc/mr][kc][mr]
  ScratchBuffer rows;      // nr x kKc dequantized weight rows before transposition
  ScratchBuffer tile;      // mr x nr output tile for partial edges
  ScratchBuffer int_pack;  // integer path: kNc rows x kIntKcBlocks blocks of weight panels
};
thread_local ThreadScratch t_scratch;

// Weight rows [row0, row0 + valid), features [pc, pc + kc) -> floats at rows_buf[r * kc].
void DequantRows(const Problem& p, int64_t row0, int64_t valid, int64_t pc, int64_t kc,
                 float* rows_buf) {
  const auto dequant = p.ks->dequant[p.kind];
  const size_t col_offset = static_cast<size_t>(pc / p.block_size * p.block_bytes);
  for (int64_t r = 0; r < valid; ++r) {
    if (p.il != nullptr) {  // float kinds' interleaved copy: 32 contiguous values a piece
      for (int64_t k = 0; k < kc; k += 32) {
        dequant(matmul_internal::IlFloatPiece(p.il, p.cols / 32, row0 + r, (pc + k) / 32),
                rows_buf + r * kc + k, 32);
      }
      continue;
    }
    const uint8_t* src = p.w + static_cast<size_t>(row0 + r) * p.row_bytes + col_offset;
    dequant(src, rows_buf + r * kc, kc);
  }
}

// Weight rows [o0, o0 + nc), features [pc, pc + kc) -> b[(panel)][k][nr], zero-padded rows.
void PackWeights(const Problem& p, int64_t o0, int64_t nc, int64_t pc, int64_t kc, float* b,
                 float* rows_buf) {
  const int nr = p.ks->nr;
  for (int64_t j0 = 0; j0 < nc; j0 += nr) {
    const int64_t valid = std::min<int64_t>(nr, nc - j0);
    DequantRows(p, o0 + j0, valid, pc, kc, rows_buf);
    float* panel = b + j0 * kc;
    if (p.ks->transpose != nullptr) {
      if (valid < nr) {
        std::memset(rows_buf + valid * kc, 0, sizeof(float) * (nr - valid) * kc);
      }
      p.ks->transpose(rows_buf, kc, panel);
      continue;
    }
    for (int64_t k = 0; k < kc; ++k) {
      float* dst = panel + k * nr;
      int64_t r = 0;
      for (; r < valid; ++r) dst[r] = rows_buf[r * kc + k];
      for (; r < nr; ++r) dst[r] = 0.0f;
    }
  }
}

}  // namespace

// Tokens [0, tokens_padded), features [pc, pc + kc) -> a[(panel)][k / 2][kBf16Mr] pairs,
// zero-padded tokens.
void PackActivationsBf16(const Problem& p, int64_t tokens_padded, int64_t pc, int64_t kc,
                         uint32_t* a) {
  constexpr int mr = matmul_internal::kBf16Mr;
  const int64_t kp = kc / 2;
  uint32_t row[kKc / 2];
  for (int64_t i0 = 0; i0 < tokens_padded; i0 += mr) {
    uint32_t* panel = a + i0 * kp;
    for (int i = 0; i < mr; ++i) {
      if (i0 + i < p.num_tokens) {
        matmul_internal::Avx512RoundToBf16Pairs(p.x + (i0 + i) * p.x_stride + pc, kc, row);
        for (int64_t k = 0; k < kp; ++k) panel[k * mr + i] = row[k];
      } else {
        for (int64_t k = 0; k < kp; ++k) panel[k * mr + i] = 0;
      }
    }
  }
}

// Tokens [t0, t0 + mc), features [pc, pc + kc) -> a[(panel)][k][mr], zero-padded tokens.
void PackActivations(const Problem& p, int64_t t0, int64_t mc, int64_t pc, int64_t kc, float* a) {
  const int mr = p.ks->mr;
  for (int64_t i0 = 0; i0 < mc; i0 += mr) {
    float* panel = a + i0 * kc;
    for (int i = 0; i < mr; ++i) {
      if (i0 + i < mc) {
        const float* src = p.x + (t0 + i0 + i) * p.x_stride + pc;
        for (int64_t k = 0; k < kc; ++k) panel[k * mr + i] = src[k];
      } else {
        for (int64_t k = 0; k < kc; ++k) panel[k * mr + i] = 0.0f;
      }
    }
  }
}

namespace {

// Integer GEMM: per slice of kIntKcBlocks blocks, pack the task's rows into kIntNr-row panels
// once, then run every token group of the task over every panel (the group's activation
// bytes stay in L1 across panels).
// With prepacked panels (Problem::int_panels) the slice's panels are read in place; o0 is a
// multiple of kIntNr (tasks hold whole panels).
void IntGemmTask(const Problem& p, int64_t o0, int64_t nc, int64_t tb, int64_t te) {
  const auto gemm = p.iks->gemm[p.kind];
  const int mr = p.iks->mr;
  const int64_t nb = p.cols / 32;
  const int64_t panel_bytes = kIntKcBlocks * kIntPanelBlockBytes;
  uint8_t* panels = nullptr;
  if (p.int_panels == nullptr) {
    panels = reinterpret_cast<uint8_t*>(
        t_scratch.int_pack.Get(static_cast<size_t>(kNc / kIntNr * panel_bytes / 4)));
  }
  for (int64_t bb = 0; bb < nb; bb += kIntKcBlocks) {
    const int64_t nblk = std::min(kIntKcBlocks, nb - bb);
    auto panel = [&](int64_t j0) -> const uint8_t* {
      if (p.int_panels == nullptr) return panels + j0 / kIntNr * panel_bytes;
      return p.int_panels +
             static_cast<size_t>(((o0 + j0) / kIntNr) * nb + bb) * kIntPanelBlockBytes;
    };
    if (p.int_panels == nullptr && p.il != nullptr) {
      for (int64_t j0 = 0; j0 < nc; j0 += kIntNr) {
        matmul_internal::PackIntPanelFromIl(p.kind, p.il, nb, o0 + j0,
                                            static_cast<int>(std::min<int64_t>(kIntNr, nc - j0)),
                                            bb, nblk, panels + j0 / kIntNr * panel_bytes);
      }
    } else if (p.int_panels == nullptr) {
      for (int64_t j0 = 0; j0 < nc; j0 += kIntNr) {
        matmul_internal::PackIntPanel(p.kind, p.w + static_cast<size_t>(o0 + j0) * p.row_bytes,
                                      p.row_bytes,
                                      static_cast<int>(std::min<int64_t>(kIntNr, nc - j0)), bb,
                                      nblk, panels + j0 / kIntNr * panel_bytes);
      }
    }
    for (int64_t t = tb; t < te; t += mr) {
      const int nt = static_cast<int>(std::min<int64_t>(mr, te - t));
      for (int64_t j0 = 0; j0 < nc; j0 += kIntNr) {
        gemm(nblk, panel(j0), p.qa, t, nt, bb, p.y + t * p.y_stride + o0 + j0, p.y_stride,
             static_cast<int>(std::min<int64_t>(kIntNr, nc - j0)), bb > 0);
      }
    }
  }
}

// The float GEMM's loop nest (below) on the copy's bf16 pairs, read in place: the 32-row panel
// of rows [o0 + j0, + 32) is groups (o0 + j0) / 16 and the next one, kp * 64 bytes of each per
// slice, which stay in L1 while the token panels stream past.
void Bf16GemmTask(const Problem& p, int64_t o0, int64_t nc, int64_t tb, int64_t te) {
  constexpr int mr = matmul_internal::kBf16Mr;
  constexpr int nr = matmul_internal::kBf16Nr;
  constexpr int64_t g_rows = matmul_internal::kIlRows;
  static_assert(kKc / 2 == matmul_internal::kBf16SlicePairs && kNc % nr == 0);
  const int64_t pairs = p.cols / 2;
  const auto* il = reinterpret_cast<const uint32_t*>(p.il);
  const int64_t groups = (p.rows + g_rows - 1) / g_rows;
  float* tile = t_scratch.tile.Get(static_cast<size_t>(mr * nr));
  for (int64_t pc = 0; pc < p.cols; pc += kKc) {
    const int64_t kc = std::min(kKc, p.cols - pc);
    const int64_t kp = kc / 2;
    const bool accumulate = pc > 0;
    const uint32_t* a_slice = p.a_pairs + pc / 2 * p.tokens_padded;
    for (int64_t j0 = 0; j0 < nc; j0 += nr) {
      const int64_t nvalid = std::min<int64_t>(nr, nc - j0);
      const int64_t g = (o0 + j0) / g_rows;
      const uint32_t* b_lo = il + g * pairs * g_rows + pc / 2 * g_rows;
      const uint32_t* b_hi = g + 1 < groups ? b_lo + pairs * g_rows : b_lo;
      for (int64_t i0 = tb; i0 < te; i0 += mr) {  // tb is a multiple of mr
        const int64_t mvalid = std::min<int64_t>(mr, te - i0);
        const uint32_t* ap = a_slice + i0 * kp;
        float* c = p.y + i0 * p.y_stride + o0 + j0;
        if (mvalid == mr && nvalid == nr) {
          p.bf16_gemm(kp, ap, b_lo, b_hi, c, p.y_stride, accumulate);
          continue;
        }
        if (accumulate) {
          for (int64_t i = 0; i < mvalid; ++i) {
            std::memcpy(tile + i * nr, c + i * p.y_stride, sizeof(float) * nvalid);
          }
        }
        p.bf16_gemm(kp, ap, b_lo, b_hi, tile, nr, accumulate);
        for (int64_t i = 0; i < mvalid; ++i) {
          std::memcpy(c + i * p.y_stride, tile + i * nr, sizeof(float) * nvalid);
        }
      }
    }
  }
}

}  // namespace

void GemmTask(const Problem& p, int64_t o0, int64_t nc, int64_t tb, int64_t te) {
  if (p.iks != nullptr) return IntGemmTask(p, o0, nc, tb, te);
  if (p.bf16_gemm != nullptr) return Bf16GemmTask(p, o0, nc, tb, te);
  const int mr = p.ks->mr;
  const int nr = p.ks->nr;
  const int64_t nc_padded = (nc + nr - 1) / nr * nr;
  ThreadScratch& s = t_scratch;
  float* b = s.b_pack.Get(static_cast<size_t>(kNc * kKc));
  float* a = s.a_pack.Get(static_cast<size_t>(kMc * kKc));
  float* rows_buf = s.rows.Get(static_cast<size_t>(nr * kKc));
  float* tile = s.tile.Get(static_cast<size_t>(mr * nr));
  assert(nc_padded <= kNc);
  (void)nc_padded;

  for (int64_t pc = 0; pc < p.cols; pc += kKc) {
    const int64_t kc = std::min(kKc, p.cols - pc);
    const bool accumulate = pc > 0;
    PackWeights(p, o0, nc, pc, kc, b, rows_buf);
    for (int64_t ic = tb; ic < te; ic += kMc) {
      const int64_t mc = std::min(kMc, te - ic);
      const float* a_block = a;
      if (p.a_packed != nullptr) {
        a_block = p.a_packed + pc * p.tokens_padded + ic * kc;  // ic is a multiple of mr
      } else {
        PackActivations(p, ic, mc, pc, kc, a);
      }
      // Row panel outer, token panel inner: the nr-row weight panel (nr * kc floats) stays in
      // L1 while the token panels stream from L2. The other order streamed the weight panel,
      // whose nr floats per k outnumber a token panel's mr, so it moved more bytes from L2.
      for (int64_t j0 = 0; j0 < nc; j0 += nr) {
        const int64_t nvalid = std::min<int64_t>(nr, nc - j0);
        const float* bp = b + j0 * kc;
        for (int64_t i0 = 0; i0 < mc; i0 += mr) {
          const int64_t mvalid = std::min<int64_t>(mr, mc - i0);
          const float* ap = a_block + i0 * kc;
          float* c = p.y + (ic + i0) * p.y_stride + o0 + j0;
          if (mvalid == mr && nvalid == nr) {
            p.ks->gemm(kc, ap, bp, c, p.y_stride, accumulate);
            continue;
          }
          // Edge tile: compute into the scratch tile, copy the valid part.
          if (accumulate) {
            for (int64_t i = 0; i < mvalid; ++i) {
              std::memcpy(tile + i * nr, c + i * p.y_stride, sizeof(float) * nvalid);
            }
          }
          p.ks->gemm(kc, ap, bp, tile, nr, accumulate);
          for (int64_t i = 0; i < mvalid; ++i) {
            std::memcpy(c + i * p.y_stride, tile + i * nr, sizeof(float) * nvalid);
          }
        }
      }
    }
  }
}

}  // namespace jisu::matmul_internal
