// MatMul driver: for each call, picks the path (dot or packed GEMM) and the kernels of every
// weight matrix, prepares the activations once for all of the call's matrices (int8 blocks,
// the GEMV's layout, bf16 pairs or float panels), cuts the work into tasks and runs them across
// the pool. The tasks themselves are in matmul_decode.cc (few tokens: rows of output, weights
// streamed once) and matmul_gemm.cc (many tokens: dequantized weight panels reused across
// tokens); kernel-set selection is in matmul_kernel_select.cc and the load-time weight
// re-layouts in matmul_weight_layouts.cc.
#include "ops/matmul.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstring>
#include <vector>

#include "ops/act_quant.h"
#include "ops/matmul_bf16.h"
#include "ops/matmul_gemv.h"
#include "ops/matmul_int.h"
#include "ops/matmul_interleaved.h"
#include "ops/matmul_kernels.h"
#include "ops/matmul_tasks.h"
#include "ops/quant.h"

namespace jisu {
namespace {

using matmul_internal::IntKernelSet;
using matmul_internal::KernelSet;
using matmul_internal::kIntNr;
using matmul_internal::kIntPanelBlockBytes;
using matmul_internal::kKc;
using matmul_internal::kMaxDotTokens;
using matmul_internal::kNc;
using matmul_internal::Problem;
using matmul_internal::ScratchBuffer;
using matmul_internal::WeightKind;

// From this many tokens on, GEMM (dequantize once into a panel, reuse across tokens) beats
// re-expanding each weight block for every group of kMaxDotTokens tokens.
// Measured on Zen 4 (1024 x 2048, one thread): dot wins clearly up to 16 tokens, the two are
// even near 24 (GEMM pads tokens to the micro-tile and pays for packing).
constexpr int64_t kGemmMinTokens = 20;
// K-quants below the float GEMM switch take the integer dot kernels (matmul_int.h).
static_assert(matmul_internal::kKQuantIntDotMaxTokens == kGemmMinTokens - 1);
// Below this many multiply-adds the pool's wake-up costs more than it saves.
constexpr int64_t kMinParallelWork = int64_t{1} << 17;
// Integer path: the token count from which packed GEMM beats the dot kernels.
constexpr int64_t kIntGemmMinTokens = 8;
// The same switch on the interleaved layout (WeightMatrix::interleaved), whose decode kernel
// shares each 16-row weight load among 4 tokens. Zen 4, 5632 x 2048, 2 threads: at 8-48 tokens
// it took 0.55-0.9x the GEMM's time, even at 64-128, 1.1x at 256.
constexpr int64_t kIlGemmMinTokens = 64;

// Quantized activations of the current call, owned by the calling thread (read by all).
thread_local ActQuantBuffer t_act_quant;
thread_local matmul_internal::GemvActBuffer t_gemv_acts;
// Activations packed once per call (Problem::a_packed), owned by the calling thread.
thread_local ScratchBuffer t_act_pack;

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
    matmul_internal::DotTask(p, r0, std::min(p.rows, r0 + s.rows_per_task));
    return;
  }
  const int64_t o0 = (i % s.row_chunks) * s.rows_per_chunk;
  const int64_t tb = (i / s.row_chunks) * s.tokens_per_task;
  matmul_internal::GemmTask(p, o0, std::min(s.rows_per_chunk, p.rows - o0), tb,
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
             std::optional<matmul_internal::ActPath> act, Part* part) {
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
  const matmul_internal::IlDotFn il_dot =
      w.interleaved != nullptr && matmul_internal::UseIntGemv(act)
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
  } else if (num_tokens == 1 && matmul_internal::IsIntKind(kind) &&
             matmul_internal::UseIntGemv(act) &&
             (p.gemv = matmul_internal::GemvFor(p.ks->isa, kind)) != nullptr) {
    s.gemm = false;
    prep = ActPrep::kGemvRow;
  } else if ((matmul_internal::IsIntKind(kind) && matmul_internal::UseIntPath(num_tokens, act)) ||
             (matmul_internal::IsIntKQuantKind(kind) &&
              matmul_internal::UseIntKQuantPath(kind, act) &&
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
          matmul_internal::UseBf16Numerics(act) && matmul_internal::Avx512Bf16Gemm() != nullptr) {
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
        matmul_internal::PackActivationsBf16(cp, padded, pc, std::min(kKc, cp.cols - pc),
                                             packed + pc / 2 * padded);
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
        matmul_internal::PackActivations(cp, 0, cp.num_tokens, pc, std::min(kKc, cp.cols - pc),
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
                int64_t num_tokens, ThreadPool& pool, const ActProducer* produce,
                const MatMulOptions& options) {
  std::optional<matmul_internal::ActPath> act;
  if (options.float_activations || options.path == MatmulPath::kFloat) {
    act = matmul_internal::ActPath::kFloat;
  } else if (options.path == MatmulPath::kInt8) {
    act = matmul_internal::ActPath::kInt8;
  }
  if (num_tokens <= 0) return;
  int64_t work = 0;
  for (const MatMulTarget& t : targets) work += t.w->rows * t.w->cols * num_tokens;
  const int threads = pool.num_threads();
  const bool parallel = threads > 1 && work >= kMinParallelWork;
  const int64_t workers = parallel ? threads : 1;
  if (targets.empty() || !CanShareActs(targets)) {
    ProduceActs(produce, num_tokens, pool, parallel);
    for (const MatMulTarget& t : targets)
      MatMul(*t.w, x, x_stride, num_tokens, t.y, t.y_stride, pool, nullptr, options);
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
    const ActPrep pr = Plan(*t.w, *kind, x, x_stride, num_tokens, t.y, t.y_stride, parallel,
                            workers, act, &parts[n++]);
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
            int64_t y_stride, ThreadPool& pool, const ActProducer* produce,
            const MatMulOptions& options) {
  const MatMulTarget target{&w, y, y_stride};
  MatMulMany({&target, 1}, x, x_stride, num_tokens, pool, produce, options);
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
