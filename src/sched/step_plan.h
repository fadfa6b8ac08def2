// The step contract between the scheduler and the model runner, as plain data (DESIGN.md shape
// 4): Schedule() returns a StepPlan, the runner executes it and hands back a StepOutput, which
// ApplyStepOutput() folds into the request states.
// StepPlan's layout is ForwardBatch's (model/forward_batch.h): token_ids is the flat batch,
// sequences are back to back in it, logits_rows are flat indices. block_table spans point into
// the scheduler's request state and stay valid until the next ApplyStepOutput / Cancel /
// AddRequest call.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sched/sched_request.h"

namespace jisu {

struct ScheduledSequence {
  RequestId request_id = 0;
  int64_t num_tokens = 0;      // tokens fed this step (>= 1), contiguous in StepPlan::token_ids
  int64_t token_offset = 0;    // index of its first token in StepPlan::token_ids
  int64_t start_position = 0;  // position of its first token; KV of [0, start) is in the blocks
  std::span<const int32_t> block_table;  // covers exactly [0, start_position + num_tokens)
  // This step reaches the end of the request's known tokens: its last row's logits are sampled
  // and the token must come back in StepOutput.
  bool needs_logits = false;
};

struct StepPlan {
  std::vector<int32_t> token_ids;            // [num_tokens] sequences back to back
  std::vector<ScheduledSequence> sequences;  // running requests first, then newly admitted
  std::vector<int64_t> logits_rows;          // flat rows of the needs_logits sequences, in order
  std::vector<RequestId> preempted;          // lost their blocks this step (to recompute later)
  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
  bool empty() const { return sequences.empty(); }
};

struct SampledToken {
  RequestId request_id = 0;
  int32_t token_id = 0;
  // The caller decided the request is done after this token (EOS, stop string). The token is
  // still appended.
  bool finished = false;
};

struct StepOutput {
  std::vector<SampledToken> sampled;  // one per needs_logits sequence of the plan
};

struct FinishedRequest {
  RequestId request_id = 0;
  FinishReason reason = FinishReason::kNone;
  std::vector<int32_t> output_tokens;
  int64_t num_preemptions = 0;
};

}  // namespace jisu
