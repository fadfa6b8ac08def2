// The decode tasks of MatMul (few tokens): each task owns a range of output rows; the dot
// kernel expands every weight block once, in registers, and multiplies it with up to
// kMaxDotTokens activation rows. Memory-bound: the point is to stream each weight byte exactly
// once. DotTask picks the integer, interleaved (int, float or bf16), GEMV or float dot kernel
// the driver chose (Problem, matmul_tasks.h).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ops/matmul_tasks.h"

namespace jisu::matmul_internal {
namespace {

constexpr int64_t kDotRowBlock = 16;  // rows per inner block when tokens need several groups

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

}  // namespace

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

}  // namespace jisu::matmul_internal
