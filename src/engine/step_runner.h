// Executes one scheduler step on the model: turns the StepPlan (scheduler's plain data) into a
// ForwardBatch, runs the forward pass (any backend) over the paged KV cache, and asks the caller to
// pick a token from the logits of every sequence that reached the end of its known tokens. The
// result goes back to Scheduler::ApplyStepOutput. Owns only reusable scratch (logits).
#pragma once

#include <vector>

#include "core/function_ref.h"
#include "jisu/status.h"
#include "model/forward_backend.h"
#include "sched/step_plan.h"

namespace jisu {

class StepRunner {
 public:
  explicit StepRunner(ForwardBackend& model) : model_(model) {}

  // sample(request_id, logits[vocab]) returns the chosen token and whether the request ends
  // with it; logits may be modified.
  Result<StepOutput> Run(const StepPlan& plan,
                         FunctionRef<SampledToken(RequestId, float* logits)> sample);

 private:
  ForwardBackend& model_;
  std::vector<float> logits_;  // [rows, vocab], grows to the largest step
};

}  // namespace jisu
