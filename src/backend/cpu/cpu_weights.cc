#include "backend/cpu/cpu_weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "ops/matmul.h"

namespace jisu {
namespace {

// The matrices the forward pass multiplies by (the embedding is only gathered from).
std::vector<WeightMatrix*> Matrices(ModelWeights& w) {
  std::vector<WeightMatrix*> out{&w.lm_head};
  for (LayerWeights& l : w.layers) {
    for (WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      out.push_back(m);
    }
  }
  return out;
}

// The pages of [p, p + n) that the copy replaced: a hint to the kernel that they will not be
// read again, so a file mapping's pages leave the resident set (MADV_PAGEOUT never changes
// contents, whatever the memory is; a kernel without it ignores the hint).
void ReleasePages(const void* p, uint64_t n) {
#ifdef MADV_PAGEOUT
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT);
#else
  (void)p;
  (void)n;
#endif
}

uint64_t Padded(uint64_t n) { return (n + 63) / 64 * 64; }

}  // namespace

CpuWeights::CpuWeights(const ModelWeights& weights, ThreadPool& pool,
                       const CpuWeightsOptions& options)
    : weights_(weights) {
  if (!options.interleave) return;
  const std::vector<WeightMatrix*> mats = Matrices(weights_);
  uint64_t total = 0;
  for (const WeightMatrix* m : mats) total += Padded(InterleavedBytes(*m));
  if (total == 0) return;
  // Huge pages (core/huge_pages.h): the decode kernels stream the whole copy every token.
  storage_ = HugePageBuffer(total);
  repacked_bytes_ = total;
  auto* next = static_cast<uint8_t*>(storage_.data());
  for (WeightMatrix* m : mats) {
    const size_t n = InterleavedBytes(*m);
    if (n == 0) continue;
    m->interleaved_bf16 = InterleavesToBf16(*m, options.matmul);
    InterleaveWeights(*m, next, pool, options.matmul);
    m->interleaved = next;
    ReleasePages(m->data, m->row_bytes * static_cast<uint64_t>(m->rows));
    next += Padded(n);
  }
}

}  // namespace jisu
