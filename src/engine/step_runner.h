// Executes one scheduler step on the model: turns the StepPlan (scheduler's plain data) into a
// ForwardBatch, runs the forward pass (any backend) over the paged KV cache, and asks the caller to
// pick a token from the logits of every sequence that reached the end of its known tokens. The
// result goes back to Scheduler::ApplyStepOutput. Owns only reusable scratch (logits).
#pragma once

#include <vector>

#include "core/function_ref.h"
#include "core/thread_pool.h"
#include "jisu/status.h"
#include "model/forward_backend.h"
#include "sched/step_plan.h"

namespace jisu {

class StepRunner {
 public:
  // With a pool, the rows of a step are sampled in parallel on it.
  StepRunner(ForwardBackend& model, ThreadPool* sample_pool)
      : model_(model), sample_pool_(sample_pool) {}

  // When the backend can sample on its device, plan_row(request_id, &row) first says, per
  // logits row, whether it is sampled there (and with which parameters and draw).
  // sample(request_id, logits[vocab], device_token) then returns the chosen token and whether
  // the request ends with it: with logits == nullptr the token is device_token (drawn on the
  // device), otherwise the caller samples the logits (which it may modify). sample is called
  // concurrently for different requests (never twice for one request in a step), so it may
  // touch only that request's state.
  using PlanRowFn = FunctionRef<void(RequestId, RowSampling*)>;
  using SampleFn = FunctionRef<SampledToken(RequestId, float* logits, int32_t device_token)>;
  Result<StepOutput> Run(const StepPlan& plan, PlanRowFn plan_row, SampleFn sample);

 private:
  ForwardBackend& model_;
  ThreadPool* sample_pool_;
  std::vector<float> logits_;  // [rows, vocab] unless the backend lends a buffer
  std::vector<RequestId> row_requests_;
  std::vector<RowSampling> row_sampling_;
  std::vector<int32_t> device_ids_;
};

}  // namespace jisu
