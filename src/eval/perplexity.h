// Perplexity of a text under a model, defined exactly as the golden fixtures define it: the
// text is tokenized without special tokens and cut into independent windows of `ctx` tokens
// (the first `max_chunks` of them); every token after the first in a window is scored given
// the tokens before it in that window; ppl = exp(mean negative log-likelihood).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "jisu/status.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "runner/generator.h"

namespace jisu {

struct PerplexityResult {
  double ppl = 0;
  double mean_nll = 0;
  int64_t num_scored = 0;
  int64_t num_chunks = 0;
  double seconds = 0;
  // The model's most likely next token at every scored position (first maximum), in order:
  // teacher-forced top-1 agreement against a reference is computed from these.
  std::vector<int32_t> top1;
};

// max_chunks <= 0 means all full windows. on_chunk (optional) gets (chunk index, running ppl).
// `options` give the KV type, matmul path and weight layout (its context and chunk are ctx).
Result<PerplexityResult> ComputePerplexity(
    const Model& model, const std::string& text, int64_t ctx, int64_t max_chunks, ThreadPool& pool,
    const GeneratorOptions& options, const std::function<void(int64_t, double)>& on_chunk = {});

}  // namespace jisu
