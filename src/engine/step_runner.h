// Executes one scheduler step on the model: turns the StepPlan (scheduler's plain data) into a
// ForwardBatch, runs the forward pass (any backend) over the paged KV cache, and asks the caller to
// pick a token from the logits of every sequence that reached the end of its known tokens. The
// result goes back to Scheduler::ApplyStepOutput. Owns only reusable scratch (logits).
#pragma once

#include <vector>

#include "core/thread_pool.h"

#include "core/function_ref.h"
#include "jisu/status.h"
#include "model/forward_backend.h"
#include "sched/step_plan.h"

namespace jisu {

class StepRunner {
 public:
  // With a pool, the rows of a step are sampled in parallel on it.
  StepRunner(ForwardBackend& model, ThreadPool* sample_pool)
      : model_(model), sample_pool_(sample_pool) {}

  // sample(request_id, logits[vocab]) returns the chosen token and whether the request ends
  // with it; logits may be modified. It is called concurrently for different requests (never
  // twice for one request in a step), so it may touch only that request's state.
  Result<StepOutput> Run(const StepPlan& plan,
                         FunctionRef<SampledToken(RequestId, float* logits)> sample);

 private:
  ForwardBackend& model_;
  ThreadPool* sample_pool_;
  std::vector<float> logits_;  // [rows, vocab] unless the backend lends a buffer
  std::vector<RequestId> row_requests_;
};

}  // namespace jisu
