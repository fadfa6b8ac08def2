// The step contract between the scheduler and the model runner, as plain data (DESIGN.md shape
// 4): Schedule() returns a StepPlan, the runner executes it and hands back a StepOutput, which
// ApplyStepOutput() folds into the request states.
// StepPlan's layout is ForwardBatch's (backend/forward_batch.h): token_ids is the flat batch,
// sequences are back to back in it, logits_rows are flat indices. block_table spans point into
// the KV manager's tables and stay valid until the next ApplyStepOutput / Cancel / AddRequest
// call.
// Multi-token steps (speculative decoding, vLLM v1): a sequence may be fed draft tokens after
// its last known token and then asks for logits at every one of those positions, so the runner
// can verify the drafts in one forward pass; it answers with the tokens it accepted (1 to
// drafts + 1 per sequence). A sequence without drafts is exactly the one-token case.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sched/sched_request.h"

namespace jisu {

struct ScheduledSequence {
  RequestId request_id = 0;
  // Tokens fed this step (>= 1), contiguous in StepPlan::token_ids: the request's next known
  // tokens, then num_draft_tokens drafts.
  int64_t num_tokens = 0;
  int64_t token_offset = 0;    // index of its first token in StepPlan::token_ids
  int64_t start_position = 0;  // position of its first token; KV of [0, start) is in the blocks
  std::span<const int32_t> block_table;  // covers exactly [0, start_position + num_tokens)
  // Drafts proposed after the request's last known token, fed as the sequence's last tokens.
  // Their KV is written like any other; the part the runner rejects is rolled back.
  int64_t num_draft_tokens = 0;
  // Its logits rows are StepPlan::logits_rows[first_logits_row, +num_logits_rows): none while a
  // prefill chunk stops short of the known tokens' end; otherwise the row of the last known
  // token, then one per draft (row i predicts the token after draft i - 1).
  int64_t first_logits_row = 0;
  int64_t num_logits_rows = 0;
  AttentionVariant attention = AttentionVariant::kAuto;  // the request's (per sequence)
  // This step reaches the end of the request's known tokens: tokens must come back in StepOutput.
  bool needs_logits() const { return num_logits_rows > 0; }
};

struct StepPlan {
  std::vector<int32_t> token_ids;            // [num_tokens] sequences back to back
  std::vector<ScheduledSequence> sequences;  // running requests first, then newly admitted
  // Flat rows whose logits are wanted: each needs_logits sequence's rows, in plan order.
  std::vector<int64_t> logits_rows;
  std::vector<RequestId> preempted;  // lost their blocks this step (to recompute later)
  // What every sequence of the step shares (their requests' StepOptionsOf): the backend runs
  // the whole step on this weight set and matmul path.
  StepOptions options;
  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
  bool empty() const { return sequences.empty(); }
};

struct SampledToken {
  RequestId request_id = 0;
  int32_t token_id = 0;
  // The caller decided the request is done after this token (EOS, stop string). The token is
  // still appended; later tokens of the same request in this step are dropped.
  bool finished = false;
};

struct StepOutput {
  // Per needs_logits sequence of the plan, the tokens it accepted, in order, as consecutive
  // entries: exactly one without drafts; with k drafts 1 to k + 1 (the drafts accepted, then
  // the token chosen at the first rejected position, or the bonus token after all k).
  std::vector<SampledToken> sampled;
};

struct FinishedRequest {
  RequestId request_id = 0;
  FinishReason reason = FinishReason::kNone;
  std::vector<int32_t> output_tokens;
  int64_t num_preemptions = 0;
};

}  // namespace jisu
