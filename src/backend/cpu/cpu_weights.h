// The weights the CPU forward pass reads: the model's matrices as views into its file, plus
// load-time copies in faster layouts where this CPU has kernels for them (today: Q4_0/Q4_1/Q8_0
// and F16/BF16 repacked into 16-row interleaved groups for AVX-512, ops/matmul.h
// InterleaveWeights).
// One owner for every CPU runner (Generator, CpuBackend), so each gets the same layouts.
#pragma once

#include <cstdint>

#include "core/huge_pages.h"
#include "core/thread_pool.h"
#include "jisu/request_options.h"
#include "model/weights.h"

namespace jisu {

struct CpuWeightsOptions {
  // Repack where it pays (see above). Costs a copy of those matrices in memory (the file's
  // pages of them are no longer read after the load) and one pass over them at load. Off for
  // comparisons (JISU_INTERLEAVE=0 at the CLI).
  bool interleave = true;
  // The matmul path the copies are laid out for: F16/BF16 become bf16 pairs unless kFloat, whose
  // kernels read f16 halves. Products on another path read the file's layout (`data`).
  MatmulPath matmul = MatmulPath::kAuto;
};

class CpuWeights {
 public:
  // `weights` (views into a model file) must outlive this object; `pool` does the repacking.
  CpuWeights(const ModelWeights& weights, ThreadPool& pool, const CpuWeightsOptions& options = {});
  CpuWeights(const CpuWeights&) = delete;
  CpuWeights& operator=(const CpuWeights&) = delete;

  const ModelWeights& weights() const { return weights_; }
  uint64_t repacked_bytes() const { return repacked_bytes_; }

 private:
  ModelWeights weights_;
  HugePageBuffer storage_;
  uint64_t repacked_bytes_ = 0;
};

}  // namespace jisu
