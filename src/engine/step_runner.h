// Executes one scheduler step on the model: turns the StepPlan (scheduler's plain data) into a
// ForwardBatch, runs the forward pass over the paged KV cache, and asks the caller to pick a
// token from the logits of every sequence that reached the end of its known tokens. The
// result goes back to Scheduler::ApplyStepOutput. Owns only reusable scratch (logits).
#pragma once

#include <vector>

#include "core/function_ref.h"
#include "jisu/status.h"
#include "kv/kv_cache.h"
#include "model/transformer.h"
#include "sched/step_plan.h"

namespace jisu {

class StepRunner {
 public:
  StepRunner(Transformer& model, KvCache& cache) : model_(model), cache_(cache) {}

  // sample(request_id, logits[vocab]) returns the chosen token and whether the request ends
  // with it; logits may be modified.
  Result<StepOutput> Run(const StepPlan& plan,
                         FunctionRef<SampledToken(RequestId, float* logits)> sample);

 private:
  Transformer& model_;
  KvCache& cache_;
  std::vector<float> logits_;  // [rows, vocab], grows to the largest step
};

}  // namespace jisu
