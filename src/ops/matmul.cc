// MatMul driver: picks the kernel set, splits the work across the pool and, for prefill,
// packs dequantized weight panels and activation panels for the GEMM micro-kernel.
//
// Decode (few tokens): each task owns a range of output rows; the dot kernel expands every
// weight block once, in registers, and multiplies it with up to kMaxDotTokens activation
// rows. Memory-bound: the point is to stream each weight byte exactly once.
//
// Prefill (many tokens), per task = (a range of kNc output rows) x (a range of tokens):
//   for each kKc-deep slice of the input features:
//     dequantize + transpose the task's weight rows into a k-major panel (B, L2-resident)
//     for each kMc block of tokens: pack activations k-major (A), then run the mr x nr
//     micro-kernel over every (token panel, row panel) pair, accumulating into y.
// Each weight element is dequantized once per task and reused by every token of the task.
#include "ops/matmul.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstring>
#include <new>
#include <vector>

#include "ops/act_quant.h"
#include "ops/cpu_features.h"
#include "ops/matmul_bf16.h"
#include "ops/matmul_gemv.h"
#include "ops/matmul_int.h"
#include "ops/matmul_interleaved.h"
#include "ops/matmul_kernels.h"
#include "ops/quant.h"

namespace jisu {
namespace matmul_internal {
namespace {

std::atomic<const KernelSet*> g_forced_set{nullptr};
std::atomic<int> g_forced_path{-1};

const KernelSet& BestKernelSet() {
  static const KernelSet* best = [] {
    if (IsaAvailable(Isa::kAvx512)) return Avx512KernelSet();
    if (IsaAvailable(Isa::kAvx2)) return Avx2KernelSet();
    return &ScalarKernelSet();
  }();
  return *best;
}

}  // namespace

std::optional<WeightKind> WeightKindOf(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return kWF32;
    case DType::kF16:
      return kWF16;
    case DType::kBF16:
      return kWBF16;
    case DType::kQ8_0:
      return kWQ8_0;
    case DType::kQ4_0:
      return kWQ4_0;
    case DType::kQ4_1:
      return kWQ4_1;
    case DType::kQ4_K:
      return kWQ4_K;
    case DType::kQ5_K:
      return kWQ5_K;
    case DType::kQ6_K:
      return kWQ6_K;
    case DType::kQ2_K:
      return kWQ2_K;
    case DType::kQ3_K:
      return kWQ3_K;
    default:
      return std::nullopt;
  }
}

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "?";
}

bool IsaAvailable(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return true;
    case Isa::kAvx2:
      return Avx2KernelSet() != nullptr && GetCpuFeatures().avx2;
    case Isa::kAvx512:
      return Avx512KernelSet() != nullptr && GetCpuFeatures().avx512;
  }
  return false;
}

const KernelSet& ActiveKernelSet() {
  const KernelSet* forced = g_forced_set.load(std::memory_order_relaxed);
  return forced != nullptr ? *forced : BestKernelSet();
}

void ForceIsa(std::optional<Isa> isa) {
  const KernelSet* set = nullptr;
  if (isa.has_value()) {
    assert(IsaAvailable(*isa));
    switch (*isa) {
      case Isa::kScalar:
        set = &ScalarKernelSet();
        break;
      case Isa::kAvx2:
        set = Avx2KernelSet();
        break;
      case Isa::kAvx512:
        set = Avx512KernelSet();
        break;
    }
  }
  g_forced_set.store(set, std::memory_order_relaxed);
}

void ForcePath(std::optional<Path> path) {
  g_forced_path.store(path.has_value() ? static_cast<int>(*path) : -1, std::memory_order_relaxed);
}

std::optional<Path> ForcedPath() {
  const int p = g_forced_path.load(std::memory_order_relaxed);
  if (p < 0) return std::nullopt;
  return static_cast<Path>(p);
}

}  // namespace matmul_internal

namespace {

using matmul_internal::IntKernelSet;
using matmul_internal::KernelSet;
using matmul_internal::kIntNr;
using matmul_internal::kIntPanelBlockBytes;
using matmul_internal::kMaxDotTokens;
using matmul_internal::WeightKind;

constexpr int64_t kKc = 256;  // depth of a packed slice (multiple of every block size)
// Output rows per GEMM task at most: a multiple of the integer path's kIntNr; the float path
// uses the largest multiple of its nr below it (AVX2's nr is 24).
constexpr int64_t kNc = 128;
constexpr int64_t kMc = 96;  // tokens per packed activation block (multiple of every mr)
// From this many tokens on, GEMM (dequantize once into a panel, reuse across tokens) beats
// re-expanding each weight block for every group of kMaxDotTokens tokens.
// Measured on Zen 4 (1024 x 2048, one thread): dot wins clearly up to 16 tokens, the two are
// even near 24 (GEMM pads tokens to the micro-tile and pays for packing).
constexpr int64_t kGemmMinTokens = 20;
// K-quants below the float GEMM switch take the integer dot kernels (matmul_int.h).
static_assert(matmul_internal::kKQuantIntDotMaxTokens == kGemmMinTokens - 1);
// Below this many multiply-adds the pool's wake-up costs more than it saves.
constexpr int64_t kMinParallelWork = int64_t{1} << 17;
constexpr int64_t kDotRowBlock = 16;  // rows per inner block when tokens need several groups
// Integer path: blocks of 32 per packed slice (panels of kNc rows: kNc / kIntNr * 32 * 1280 B
// = 160 KiB, L2-resident), and the token count from which packed GEMM beats the dot kernels.
constexpr int64_t kIntKcBlocks = 32;
constexpr int64_t kIntGemmMinTokens = 8;
// The same switch on the interleaved layout (WeightMatrix::interleaved), whose decode kernel
// shares each 16-row weight load among 4 tokens. Zen 4, 5632 x 2048, 2 threads: at 8-48 tokens
// it took 0.55-0.9x the GEMM's time, even at 64-128, 1.1x at 256.
constexpr int64_t kIlGemmMinTokens = 64;

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

// Per-thread scratch; the pool's threads live as long as the pool, so this is allocated once
// per thread and reused by every call.
struct ThreadScratch {
  ScratchBuffer b_pack;    // kNc x kKc dequantized weights, [nc/nr][kc][nr]
  ScratchBuffer a_pack;    // kMc x kKc activations, [mc/mr][kc][mr]
  ScratchBuffer rows;      // nr x kKc dequantized weight rows before transposition
  ScratchBuffer tile;      // mr x nr output tile for partial edges
  ScratchBuffer int_pack;  // integer path: kNc rows x kIntKcBlocks blocks of weight panels
};
// Quantized activations of the current call, owned by the calling thread (read by all).
thread_local ActQuantBuffer t_act_quant;
thread_local matmul_internal::GemvActBuffer t_gemv_acts;
thread_local ThreadScratch t_scratch;
// Activations packed once per call (Problem::a_packed), owned by the calling thread.
thread_local ScratchBuffer t_act_pack;

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

// ---- Decode -------------------------------------------------------------------------------

void IntDotTask(const Problem& p, int64_t r0, int64_t r1) {
  const auto dot = p.iks->dot[p.kind];
  const int64_t group_rows = p.num_tokens <= kMaxDotTokens ? r1 - r0 : kDotRowBlock;
  for (int64_t rb = r0; rb < r1; rb += group_rows) {
    const int64_t nrows = std::min(group_rows, r1 - rb);
    for (int64_t t = 0; t < p.num_tokens; t += kMaxDotTokens) {
      const int nt = static_cast<int>(std::min<int64_t>(kMaxDotTokens, p.num_tokens - t));
      dot(p.w + static_cast<size_t>(rb) * p.row_bytes, p.row_bytes, nrows, p.qa, t, nt,
          p.y + t * p.y_stride + rb, p.y_stride);
    }
  }
}

// Interleaved decode (either family of kinds): rows [r0, r1) are whole groups of 16 (r1 may be
// the matrix end). With more tokens than one kernel call takes, a pass of two groups (one
// paired walk of the kernels) meets every token group, so its weights come from L1/L2 after
// the first; meanwhile the next pass's weights are prefetched a slice before each call, so only
// a task's first pass waits for memory. Zen 4, 32 tokens, 2 threads, weights cycled through
// 256 MiB, best of 8 alternating runs: 576 x 576 55.5 -> 50.0 us, 1536 x 576 132.5 -> 124.6,
// 576 x 1536 147.4 -> 130.5 (passes of 4 groups without prefetch before).
// call(g, g_end, t, nt) runs the kernel on groups [g, g_end), tokens t .. t + nt - 1.
template <typename Call>
void ForIlPasses(const Problem& p, int64_t r0, int64_t r1, Call call) {
  using matmul_internal::kIlRows;
  constexpr int64_t kGroupsPerPass = 2;
  const int64_t g0 = r0 / kIlRows, g1 = (r1 + kIlRows - 1) / kIlRows;
  if (p.num_tokens <= kMaxDotTokens) return call(g0, g1, 0, static_cast<int>(p.num_tokens));
  const size_t group_bytes =
      matmul_internal::IlRecordBytes(p.kind) * static_cast<size_t>(p.cols / 32);
  const int64_t calls = (p.num_tokens + kMaxDotTokens - 1) / kMaxDotTokens;
  for (int64_t g = g0; g < g1; g += kGroupsPerPass) {
    const int64_t next_end = std::min(g1, g + 2 * kGroupsPerPass);
    // Offsets, not a pointer: past the last pass there is no next one to point at.
    const size_t next_begin = static_cast<size_t>(g + kGroupsPerPass) * group_bytes;
    const size_t next_bytes =
        static_cast<size_t>(std::max<int64_t>(0, next_end - (g + kGroupsPerPass))) * group_bytes;
    const size_t slice = (next_bytes / calls + 63) / 64 * 64;
    size_t done = 0;
    for (int64_t t = 0; t < p.num_tokens; t += kMaxDotTokens) {
      for (const size_t end = std::min(next_bytes, done + slice); done < end; done += 64) {
        __builtin_prefetch(p.il + next_begin + done, 0, 2);
      }
      call(g, std::min(g1, g + kGroupsPerPass), t,
           static_cast<int>(std::min<int64_t>(kMaxDotTokens, p.num_tokens - t)));
    }
  }
}

void IlDotTask(const Problem& p, int64_t r0, int64_t r1) {
  ForIlPasses(p, r0, r1, [&p](int64_t g, int64_t g_end, int64_t t, int nt) {
    p.il_dot(p.il, p.rows, g, g_end, p.qa, t, nt, p.y + t * p.y_stride, p.y_stride);
  });
}

// Float kinds: tokens straight from x.
void FloatIlDotTask(const Problem& p, int64_t r0, int64_t r1) {
  ForIlPasses(p, r0, r1, [&p](int64_t g, int64_t g_end, int64_t t, int nt) {
    p.fil_dot(p.il, p.rows, p.cols / 32, g, g_end, p.x + t * p.x_stride, p.x_stride, nt,
              p.y + t * p.y_stride, p.y_stride);
  });
}

// bf16 numerics: tokens as pairs.
void Bf16IlDotTask(const Problem& p, int64_t r0, int64_t r1) {
  const int64_t pairs = p.cols / 2;
  ForIlPasses(p, r0, r1, [&p, pairs](int64_t g, int64_t g_end, int64_t t, int nt) {
    p.bf16_dot(reinterpret_cast<const uint32_t*>(p.il), p.rows, pairs, g, g_end,
               p.a_pairs + t * pairs, pairs, nt, p.y + t * p.y_stride, p.y_stride);
  });
}

void DotTask(const Problem& p, int64_t r0, int64_t r1) {
  if (p.il_dot != nullptr) return IlDotTask(p, r0, r1);
  if (p.fil_dot != nullptr) return FloatIlDotTask(p, r0, r1);
  if (p.bf16_dot != nullptr) return Bf16IlDotTask(p, r0, r1);
  if (p.gemv != nullptr) {
    return p.gemv(p.w + static_cast<size_t>(r0) * p.row_bytes, p.row_bytes, r1 - r0, p.gacts,
                  p.y + r0);
  }
  if (p.iks != nullptr) return IntDotTask(p, r0, r1);
  const auto dot = p.ks->dot[p.kind];
  if (p.num_tokens <= kMaxDotTokens) {
    dot(p.w + static_cast<size_t>(r0) * p.row_bytes, p.row_bytes, p.cols, r1 - r0, p.x, p.x_stride,
        static_cast<int>(p.num_tokens), p.y + r0, p.y_stride);
    return;
  }
  // Several token groups: keep a small block of rows cache-resident across the groups.
  for (int64_t rb = r0; rb < r1; rb += kDotRowBlock) {
    const int64_t nrows = std::min(kDotRowBlock, r1 - rb);
    for (int64_t t = 0; t < p.num_tokens; t += kMaxDotTokens) {
      const int nt = static_cast<int>(std::min<int64_t>(kMaxDotTokens, p.num_tokens - t));
      dot(p.w + static_cast<size_t>(rb) * p.row_bytes, p.row_bytes, p.cols, nrows,
          p.x + t * p.x_stride, p.x_stride, nt, p.y + t * p.y_stride + rb, p.y_stride);
    }
  }
}

// ---- Prefill ------------------------------------------------------------------------------

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

// ---- Scheduling ---------------------------------------------------------------------------

struct Schedule {
  bool gemm = false;
  int64_t num_tasks = 0;
  // Dot: task i covers rows [i * rows_per_task, ...). GEMM: task i = (row chunk i % row_chunks,
  // token chunk i / row_chunks).
  int64_t rows_per_task = 0;
  int64_t row_chunks = 0;
  int64_t rows_per_chunk = 0;  // GEMM: a multiple of nr, at most kNc
  int64_t tokens_per_task = 0;
};

// One weight matrix of a call: its problem and how its work is cut into tasks.
struct Part {
  Problem p;
  Schedule s;
};

void RunTask(const Part& part, int64_t i) {
  const Problem& p = part.p;
  const Schedule& s = part.s;
  if (!s.gemm) {
    const int64_t r0 = i * s.rows_per_task;
    DotTask(p, r0, std::min(p.rows, r0 + s.rows_per_task));
    return;
  }
  const int64_t o0 = (i % s.row_chunks) * s.rows_per_chunk;
  const int64_t tb = (i / s.row_chunks) * s.tokens_per_task;
  GemmTask(p, o0, std::min(s.rows_per_chunk, p.rows - o0), tb,
           std::min(p.num_tokens, tb + s.tokens_per_task));
}

// Every task of every part, claimed one at a time across the parts: the call ends with one
// wait for the pool however many matrices it has, and one matrix's last tasks run beside the
// next one's first.
void RunAll(const Part* parts, int num_parts, ThreadPool& pool, bool parallel) {
  int64_t total = 0;
  for (int j = 0; j < num_parts; ++j) total += parts[j].s.num_tasks;
  auto run = [parts](int64_t i) {
    int j = 0;
    while (i >= parts[j].s.num_tasks) i -= parts[j++].s.num_tasks;
    RunTask(parts[j], i);
  };
  if (!parallel || total == 1) {
    for (int64_t i = 0; i < total; ++i) run(i);
    return;
  }
  std::atomic<int64_t> next{0};
  pool.RunOnAll([&](int) {
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < total;) run(i);
  });
}

// Runs `produce` (when given) over every token: split over the pool when parallel.
void ProduceActs(const ActProducer* produce, int64_t num_tokens, ThreadPool& pool, bool parallel) {
  if (produce == nullptr) return;
  if (parallel) {
    pool.ParallelFor(num_tokens, 1, [produce](int64_t b, int64_t e) { (*produce)(b, e); });
  } else {
    (*produce)(0, num_tokens);
  }
}

// Quantizes every token of x once for all rows (p->qa), each chunk of tokens right after
// `produce` wrote it; split over the pool when there are many tokens.
void QuantizeActs(Problem* p, const float* x, int64_t x_stride, int64_t num_tokens,
                  ThreadPool& pool, bool parallel, int threads, const ActProducer* produce) {
  p->qa = t_act_quant.Prepare(num_tokens, p->cols);
  if (parallel && num_tokens >= 2 * threads) {
    std::atomic<int64_t> next{0};
    ActQuantBuffer* aq = &t_act_quant;
    const int64_t chunk = std::max<int64_t>(1, num_tokens / (4 * threads));
    pool.RunOnAll([&](int) {
      for (int64_t t; (t = next.fetch_add(chunk, std::memory_order_relaxed)) < num_tokens;) {
        const int64_t end = std::min(num_tokens, t + chunk);
        if (produce != nullptr) (*produce)(t, end);
        aq->QuantizeTokens(x, x_stride, t, end);
      }
    });
  } else {
    ProduceActs(produce, num_tokens, pool, parallel);
    t_act_quant.QuantizeTokens(x, x_stride, 0, num_tokens);
  }
}

// pack(pc) for every kKc-deep slice [pc, pc + kKc) of `cols` features, slices shared out over
// the pool when parallel (the activation packers: once per call, for every task).
template <typename Pack>
void ForEachSlice(int64_t cols, ThreadPool& pool, bool parallel, Pack pack) {
  const int64_t slices = (cols + kKc - 1) / kKc;
  if (!parallel || slices == 1) {
    for (int64_t i = 0; i < slices; ++i) pack(i * kKc);
    return;
  }
  std::atomic<int64_t> next{0};
  pool.RunOnAll([&](int) {
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < slices;) pack(i * kKc);
  });
}

// What a call does to its activations before the tasks run: once, for all of its matrices.
enum class ActPrep {
  kNone,         // the kernels read x as it is
  kQuantize,     // int8 blocks of every token (Problem::qa)
  kGemvRow,      // one token quantized and rearranged for the GEMV (Problem::gacts)
  kBf16Rows,     // every token as bf16 pairs, row by row (the bf16 dot)
  kBf16Panels,   // every token as bf16 pairs in the bf16 GEMM's panels
  kFloatPanels,  // every token in the float GEMM's panels
};

// Picks w's kernels and cuts its work into tasks; PrepareActs fills the activation fields.
ActPrep Plan(const WeightMatrix& w, WeightKind kind, const float* x, int64_t x_stride,
             int64_t num_tokens, float* y, int64_t y_stride, bool parallel, int64_t workers,
             Part* part) {
  const DTypeTraits& traits = Traits(w.dtype);
  assert(w.cols > 0 && w.cols % traits.block_size == 0);
  assert(w.row_bytes >= RowBytes(w.dtype, static_cast<uint64_t>(w.cols)).value_or(~uint64_t{0}));
  assert(x_stride >= w.cols && y_stride >= w.rows);
  Problem& p = part->p;
  Schedule& s = part->s;
  p = Problem{&matmul_internal::ActiveKernelSet(),
              kind,
              static_cast<const uint8_t*>(w.data),
              w.row_bytes,
              w.rows,
              w.cols,
              traits.block_size,
              traits.block_bytes,
              x,
              x_stride,
              num_tokens,
              y,
              y_stride,
              nullptr,
              {}};
  p.int_panels = w.int_panels;
  s = Schedule{};
  ActPrep prep = ActPrep::kNone;

  const std::optional<matmul_internal::Path> forced = matmul_internal::ForcedPath();
  int64_t token_granule = p.ks->mr;
  const matmul_internal::IlDotFn il_dot = w.interleaved != nullptr && matmul_internal::UseIntGemv()
                                              ? matmul_internal::IlDotFor(p.ks->isa, kind)
                                              : nullptr;
  if (il_dot != nullptr) {
    p.il = w.interleaved;
    p.iks = &matmul_internal::IntKernelsFor(p.ks->isa);
    s.gemm = forced.has_value() ? *forced == matmul_internal::Path::kGemm
                                : num_tokens >= kIlGemmMinTokens;
    if (!s.gemm) p.il_dot = il_dot;
    token_granule = s.gemm ? p.iks->mr : kMaxDotTokens;
    prep = ActPrep::kQuantize;
  } else if (num_tokens == 1 && matmul_internal::IsIntKind(kind) && matmul_internal::UseIntGemv() &&
             (p.gemv = matmul_internal::GemvFor(p.ks->isa, kind)) != nullptr) {
    s.gemm = false;
    prep = ActPrep::kGemvRow;
  } else if ((matmul_internal::IsIntKind(kind) && matmul_internal::UseIntPath(num_tokens)) ||
             (matmul_internal::IsIntKQuantKind(kind) && matmul_internal::UseIntKQuantPath(kind) &&
              matmul_internal::IntKernelsFor(p.ks->isa).dot[kind] != nullptr)) {
    p.iks = &matmul_internal::IntKernelsFor(p.ks->isa);
    const bool has_gemm = p.iks->gemm[kind] != nullptr;
    // K-quants keep the dot kernels to kKQuantIntDotMaxTokens: the super-block scales make
    // their panels dearer to pack.
    const int64_t gemm_min = matmul_internal::IsIntKQuantKind(kind)
                                 ? matmul_internal::kKQuantIntDotMaxTokens + 1
                                 : kIntGemmMinTokens;
    s.gemm = has_gemm && (forced.has_value() ? *forced == matmul_internal::Path::kGemm
                                             : num_tokens >= gemm_min);
    token_granule = has_gemm ? p.iks->mr : kMaxDotTokens;
    prep = ActPrep::kQuantize;
  } else {
    s.gemm =
        forced.has_value() ? *forced == matmul_internal::Path::kGemm : num_tokens >= kGemmMinTokens;
    if (w.interleaved != nullptr && w.interleaved_bf16) {
      // bf16 pairs: read in bf16 numerics where they are on and this ISA has the kernels;
      // otherwise the float kernels on the rows.
      if (matmul_internal::IsIlFloatKind(kind) && p.ks->isa == matmul_internal::Isa::kAvx512 &&
          matmul_internal::UseBf16Numerics() && matmul_internal::Avx512Bf16Gemm() != nullptr) {
        p.il = w.interleaved;
        if (s.gemm) {
          p.bf16_gemm = matmul_internal::Avx512Bf16Gemm();
          token_granule = matmul_internal::kBf16Mr;
          prep = ActPrep::kBf16Panels;
        } else {
          p.bf16_dot = matmul_internal::Avx512Bf16IlDot();
          prep = ActPrep::kBf16Rows;
        }
      }
    } else if (w.interleaved != nullptr) {
      const matmul_internal::FloatIlDotFn fil = matmul_internal::FloatIlDotFor(p.ks->isa, kind);
      if (fil != nullptr) {  // both paths read the copy (the GEMM packs its panels from it)
        p.il = w.interleaved;
        if (!s.gemm) p.fil_dot = fil;
      }
    }
  }
  if (!s.gemm) {
    // A few tasks per worker so a descheduled thread does not stall the call; rows stay
    // contiguous within a task for the hardware prefetcher. Multiples of 4 rows (the GEMV's
    // row group); on the interleaved layout whole groups of 16, pairs of them from 2 tokens on
    // (the kernels' paired walk: 5-group tasks of a 576-row matrix each left one unpaired).
    const int64_t target_tasks = workers == 1 ? 1 : workers * 4;
    const bool il = p.il_dot != nullptr || p.fil_dot != nullptr || p.bf16_dot != nullptr;
    const int64_t granule = !il              ? 4
                            : num_tokens > 1 ? 2 * matmul_internal::kIlRows
                                             : matmul_internal::kIlRows;
    s.rows_per_task = std::max<int64_t>(granule, (w.rows + target_tasks - 1) / target_tasks);
    s.rows_per_task = (s.rows_per_task + granule - 1) / granule * granule;
    s.num_tasks = (w.rows + s.rows_per_task - 1) / s.rows_per_task;
  } else {
    s.rows_per_chunk = p.iks != nullptr || p.bf16_gemm != nullptr ? kNc : kNc / p.ks->nr * p.ks->nr;
    if (p.iks != nullptr && parallel && num_tokens <= 64) {
      // Batched decode: a few tokens, so one task per row chunk and no token split. Chunks of
      // kNc rows left a 576-row matrix as 4.5 tasks for 2 workers (one idles a third of the
      // call); panels of the integer path are packed per task, so smaller chunks cost nothing
      // extra. Aim at >= 8 tasks per worker, in whole panels.
      const int64_t panels = (w.rows + kIntNr - 1) / kIntNr;
      const int64_t per_chunk = std::clamp<int64_t>(panels / (8 * workers), 1, kNc / kIntNr);
      s.rows_per_chunk = per_chunk * kIntNr;
    }
    s.row_chunks = (w.rows + s.rows_per_chunk - 1) / s.rows_per_chunk;
    // Split tokens too when there are too few row chunks to keep every worker busy; each
    // token chunk re-dequantizes its weights, so split no more than needed.
    const int64_t mr = token_granule;
    const int64_t max_token_chunks = (num_tokens + mr - 1) / mr;
    const int64_t token_chunks =
        std::clamp<int64_t>((2 * workers + s.row_chunks - 1) / s.row_chunks, 1, max_token_chunks);
    s.tokens_per_task = ((num_tokens + token_chunks - 1) / token_chunks + mr - 1) / mr * mr;
    s.num_tasks = s.row_chunks * ((num_tokens + s.tokens_per_task - 1) / s.tokens_per_task);
  }
  // The float GEMM packs every token's activations once per call, shared by all tasks. Packing
  // per task repeated it for every kNc-row chunk: 26% of a 1-thread F16 pp512 on Zen 3 (perf),
  // more than the dequantization of the weights.
  if (s.gemm && p.iks == nullptr && p.bf16_gemm == nullptr && s.row_chunks > 1) {
    prep = ActPrep::kFloatPanels;
  }
  return prep;
}

// Prepares the activations as `prep` says, in the calling thread's buffers, and points p's
// activation fields at them.
// `produce` (may be null) writes x first: inside the quantization pass, else over the pool.
void PrepareActs(ActPrep prep, Problem* p, ThreadPool& pool, bool parallel, int threads,
                 const ActProducer* produce) {
  if (prep == ActPrep::kQuantize) {
    QuantizeActs(p, p->x, p->x_stride, p->num_tokens, pool, parallel, threads, produce);
    return;
  }
  ProduceActs(produce, p->num_tokens, pool, parallel);
  switch (prep) {
    case ActPrep::kNone:
    case ActPrep::kQuantize:
      return;
    case ActPrep::kGemvRow: {
      const QuantizedActs qa = t_act_quant.Quantize(p->x, p->x_stride, 1, p->cols);
      p->gacts = t_gemv_acts.Prepare(qa, 0);
      return;
    }
    case ActPrep::kBf16Rows: {
      // Rounded exactly as the GEMM's packer rounds them (same function, whole 32-column
      // pieces), so both paths see the same words.
      const int64_t pairs = p->cols / 2;
      auto* xp =
          reinterpret_cast<uint32_t*>(t_act_pack.Get(static_cast<size_t>(p->num_tokens * pairs)));
      for (int64_t t = 0; t < p->num_tokens; ++t) {
        matmul_internal::Avx512RoundToBf16Pairs(p->x + t * p->x_stride, p->cols, xp + t * pairs);
      }
      p->a_pairs = xp;
      return;
    }
    case ActPrep::kBf16Panels: {
      const int64_t mr = matmul_internal::kBf16Mr;
      const int64_t padded = (p->num_tokens + mr - 1) / mr * mr;
      auto* packed = reinterpret_cast<uint32_t*>(
          t_act_pack.Get(static_cast<size_t>(padded * ((p->cols + 1) / 2))));
      const Problem& cp = *p;
      ForEachSlice(p->cols, pool, parallel, [&cp, packed, padded](int64_t pc) {
        PackActivationsBf16(cp, padded, pc, std::min(kKc, cp.cols - pc), packed + pc / 2 * padded);
      });
      p->a_pairs = packed;
      p->tokens_padded = padded;
      return;
    }
    case ActPrep::kFloatPanels: {
      const int64_t mr = p->ks->mr;
      const int64_t padded = (p->num_tokens + mr - 1) / mr * mr;
      float* packed = t_act_pack.Get(static_cast<size_t>(padded * p->cols));
      const Problem& cp = *p;
      ForEachSlice(p->cols, pool, parallel, [&cp, packed, padded](int64_t pc) {
        PackActivations(cp, 0, cp.num_tokens, pc, std::min(kKc, cp.cols - pc),
                        packed + pc * padded);
      });
      p->a_packed = packed;
      p->tokens_padded = padded;
      return;
    }
  }
}

// The activation fields PrepareActs sets.
void ShareActs(const Problem& from, Problem* to) {
  to->qa = from.qa;
  to->gacts = from.gacts;
  to->a_packed = from.a_packed;
  to->a_pairs = from.a_pairs;
  to->tokens_padded = from.tokens_padded;
}

constexpr int kMaxParts = 4;

// True where one set of prepared activations serves all of `targets`: the same type, depth and
// layout, so Plan picks the same kernels for each.
bool CanShareActs(std::span<const MatMulTarget> targets) {
  if (targets.size() > kMaxParts) return false;
  const WeightMatrix& a = *targets[0].w;
  for (const MatMulTarget& t : targets) {
    const WeightMatrix& b = *t.w;
    if (b.dtype != a.dtype || b.cols != a.cols ||
        (b.interleaved == nullptr) != (a.interleaved == nullptr) ||
        b.interleaved_bf16 != a.interleaved_bf16) {
      return false;
    }
  }
  return true;
}

}  // namespace

void MatMulMany(std::span<const MatMulTarget> targets, const float* x, int64_t x_stride,
                int64_t num_tokens, ThreadPool& pool, const ActProducer* produce) {
  if (num_tokens <= 0) return;
  int64_t work = 0;
  for (const MatMulTarget& t : targets) work += t.w->rows * t.w->cols * num_tokens;
  const int threads = pool.num_threads();
  const bool parallel = threads > 1 && work >= kMinParallelWork;
  const int64_t workers = parallel ? threads : 1;
  if (targets.empty() || !CanShareActs(targets)) {
    ProduceActs(produce, num_tokens, pool, parallel);
    for (const MatMulTarget& t : targets)
      MatMul(*t.w, x, x_stride, num_tokens, t.y, t.y_stride, pool);
    return;
  }
  const std::optional<WeightKind> kind = matmul_internal::WeightKindOf(targets[0].w->dtype);
  assert(kind.has_value() && "unsupported weight type");
  if (!kind.has_value()) return ProduceActs(produce, num_tokens, pool, parallel);

  Part parts[kMaxParts];
  int n = 0;
  ActPrep prep = ActPrep::kNone;
  for (const MatMulTarget& t : targets) {
    if (t.w->rows <= 0) continue;
    const ActPrep pr =
        Plan(*t.w, *kind, x, x_stride, num_tokens, t.y, t.y_stride, parallel, workers, &parts[n++]);
    // Same kernels for every part (CanShareActs); only the float GEMM's panels depend on the
    // row count (packed once when some part has several row chunks, read by every part).
    assert(n == 1 || pr == prep || (pr == ActPrep::kNone && prep == ActPrep::kFloatPanels) ||
           (pr == ActPrep::kFloatPanels && prep == ActPrep::kNone));
    if (pr != ActPrep::kNone) prep = pr;
  }
  if (n == 0) return ProduceActs(produce, num_tokens, pool, parallel);
  PrepareActs(prep, &parts[0].p, pool, parallel, threads, produce);
  for (int j = 1; j < n; ++j) ShareActs(parts[0].p, &parts[j].p);
  RunAll(parts, n, pool, parallel);
}

void MatMul(const WeightMatrix& w, const float* x, int64_t x_stride, int64_t num_tokens, float* y,
            int64_t y_stride, ThreadPool& pool, const ActProducer* produce) {
  const MatMulTarget target{&w, y, y_stride};
  MatMulMany({&target, 1}, x, x_stride, num_tokens, pool, produce);
}

size_t IntPanelBytes(const WeightMatrix& w) {
  const std::optional<WeightKind> kind = matmul_internal::WeightKindOf(w.dtype);
  if (!kind.has_value() || !matmul_internal::IsIntKind(*kind) || w.rows <= 0 || w.cols % 32 != 0) {
    return 0;
  }
  const int64_t panels = (w.rows + kIntNr - 1) / kIntNr;
  return static_cast<size_t>(panels * (w.cols / 32) * kIntPanelBlockBytes);
}

void PackIntPanels(const WeightMatrix& w, uint8_t* out, ThreadPool& pool) {
  const std::optional<WeightKind> kind = matmul_internal::WeightKindOf(w.dtype);
  if (IntPanelBytes(w) == 0) return;
  const int64_t nb = w.cols / 32;
  const int64_t panels = (w.rows + kIntNr - 1) / kIntNr;
  const auto* base = static_cast<const uint8_t*>(w.data);
  pool.ParallelFor(panels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t r0 = i * kIntNr;
      matmul_internal::PackIntPanel(*kind, base + static_cast<size_t>(r0) * w.row_bytes,
                                    w.row_bytes,
                                    static_cast<int>(std::min<int64_t>(kIntNr, w.rows - r0)), 0, nb,
                                    out + static_cast<size_t>(i * nb) * kIntPanelBlockBytes);
    }
  });
}

size_t InterleavedBytes(const WeightMatrix& w) {
  const std::optional<WeightKind> kind = matmul_internal::WeightKindOf(w.dtype);
  using matmul_internal::Isa;
  using matmul_internal::IsaAvailable;
  // The ISA MatMul picks on this CPU when nothing is forced.
  const Isa best = IsaAvailable(Isa::kAvx512) ? Isa::kAvx512
                   : IsaAvailable(Isa::kAvx2) ? Isa::kAvx2
                                              : Isa::kScalar;
  if (!kind.has_value() || !matmul_internal::HasIlLayout(best, *kind)) {
    return 0;
  }
  return matmul_internal::InterleavedBytes(*kind, w.rows, w.cols);
}

bool InterleavesToBf16(const WeightMatrix& w) {
  const std::optional<WeightKind> kind = matmul_internal::WeightKindOf(w.dtype);
  return kind.has_value() && matmul_internal::IsIlFloatKind(*kind) && InterleavedBytes(w) > 0 &&
         matmul_internal::IsaAvailable(matmul_internal::Isa::kAvx512) &&
         matmul_internal::Avx512Bf16Gemm() != nullptr && matmul_internal::UseBf16Numerics();
}

void InterleaveWeights(const WeightMatrix& w, uint8_t* out, ThreadPool& pool) {
  const std::optional<WeightKind> kind = matmul_internal::WeightKindOf(w.dtype);
  if (!kind.has_value() || matmul_internal::InterleavedBytes(*kind, w.rows, w.cols) == 0) return;
  const bool bf16_pairs = InterleavesToBf16(w);
  const int64_t groups = (w.rows + matmul_internal::kIlRows - 1) / matmul_internal::kIlRows;
  pool.ParallelFor(groups, 1, [&](int64_t begin, int64_t end) {
    matmul_internal::InterleaveGroups(*kind, static_cast<const uint8_t*>(w.data), w.row_bytes,
                                      w.rows, w.cols, begin, end, out, bf16_pairs);
  });
}

void DotRowsF32(const float* rows, int64_t row_stride, int64_t cols, int64_t num_rows,
                const float* x, int64_t x_stride, int64_t num_x, float* y, int64_t y_stride) {
  using matmul_internal::kMaxDotTokens;
  const auto dot = matmul_internal::ActiveKernelSet().dot[matmul_internal::kWF32];
  for (int64_t j = 0; j < num_x; j += kMaxDotTokens) {
    const int n = static_cast<int>(std::min<int64_t>(kMaxDotTokens, num_x - j));
    dot(reinterpret_cast<const uint8_t*>(rows), static_cast<size_t>(row_stride) * sizeof(float),
        cols, num_rows, x + j * x_stride, x_stride, n, y + j * y_stride, y_stride);
  }
}

void MatMulReference(const WeightMatrix& w, const float* x, int64_t x_stride, int64_t num_tokens,
                     float* y, int64_t y_stride) {
  std::vector<float> row(static_cast<size_t>(w.cols));
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t o = 0; o < w.rows; ++o) {
    DequantizeRow(w.dtype, base + static_cast<size_t>(o) * w.row_bytes, row.data(), w.cols);
    for (int64_t t = 0; t < num_tokens; ++t) {
      const float* xt = x + t * x_stride;
      double sum = 0.0;
      for (int64_t i = 0; i < w.cols; ++i) sum += static_cast<double>(row[i]) * xt[i];
      y[t * y_stride + o] = static_cast<float>(sum);
    }
  }
}

const char* MatMulIsaName() {
  return matmul_internal::IsaName(matmul_internal::ActiveKernelSet().isa);
}

}  // namespace jisu
