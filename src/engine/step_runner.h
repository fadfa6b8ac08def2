// Executes one scheduler step on the model: turns the StepPlan (scheduler's plain data) into a
// ForwardBatch, runs the forward pass (any backend) over the paged KV cache, and asks the caller to
// pick tokens from the logits of every sequence that reached the end of its known tokens. The
// result goes back to Scheduler::ApplyStepOutput. Owns only reusable scratch (logits).
// A sequence fed drafts is verified here, greedily-exact: its rows are sampled in order and the
// draft after row i is accepted only if row i's token equals it; the first mismatch (or a token
// that ends the request) is the last token kept. That is exact for greedy sampling only, which is
// why the engine proposes drafts for greedy requests alone (temperature > 0 needs the
// rejection-sampling rule and the draft probabilities).
#pragma once

#include <span>
#include <vector>

#include "backend/forward_backend.h"
#include "core/function_ref.h"
#include "core/thread_pool.h"
#include "jisu/status.h"
#include "sched/step_plan.h"

namespace jisu {

class StepRunner {
 public:
  // With a pool, the sequences of a step are sampled in parallel on it.
  StepRunner(ForwardBackend& model, ThreadPool* sample_pool)
      : model_(model), sample_pool_(sample_pool) {}

  // When the backend can sample on its device, plan_rows(request_id, rows) first says, for each
  // sequence with logits rows, whether its rows are drawn there (and with which parameters,
  // draws, logit_bias and whether a grammar masks them). A sequence fed drafts has one row per
  // draft + 1, drawn at once and read in turn by verification. A masked sequence's rows must all
  // be masked and drawn on the device; fill_masks(request_id, drafts, masks, words) then fills
  // their masks (row i: after drafts[0..i)) while the device runs the forward pass, on the
  // sampling pool. sample(request_id, logits[vocab], device_token) then returns the chosen token
  // and whether the request ends with it: with logits == nullptr the token is device_token
  // (drawn on the device), otherwise the caller samples the logits (which it may modify). Every
  // token sample returns is accepted, so the caller may emit it at once. sample and fill_masks
  // are called concurrently for different requests, and sample for one request's rows in order
  // on one thread, so they may touch only that request's state.
  using PlanRowsFn = FunctionRef<void(RequestId, std::span<RowSampling> rows)>;
  using FillMasksFn =
      FunctionRef<void(RequestId, std::span<const int32_t> drafts, uint32_t* masks, size_t words)>;
  using SampleFn = FunctionRef<SampledToken(RequestId, float* logits, int32_t device_token)>;
  Result<StepOutput> Run(const StepPlan& plan, PlanRowsFn plan_rows, FillMasksFn fill_masks,
                         SampleFn sample);

  // The last step's host time spent filling device masks (0 without masked rows): it overlaps
  // the forward pass, so the step waits for it only where it is longer than the forward.
  double last_mask_seconds() const { return mask_seconds_; }

 private:
  ForwardBackend& model_;
  ThreadPool* sample_pool_;
  std::vector<float> logits_;  // [rows, vocab] unless the backend lends a buffer
  std::vector<const ScheduledSequence*> logit_seqs_;  // sequences with logits rows, plan order
  std::vector<RowSampling> row_sampling_;
  std::vector<int32_t> device_ids_;
  std::vector<SampledToken> row_tokens_;  // [rows]: a sequence's accepted tokens at its rows
  std::vector<int64_t> num_accepted_;     // [logit_seqs_]
  std::vector<const ScheduledSequence*> masked_seqs_;  // in plan (= row) order
  std::vector<size_t> mask_offsets_;                   // [masked_seqs_]: first mask row
  double mask_seconds_ = 0;
};

}  // namespace jisu
