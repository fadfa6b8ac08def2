// The scheduler's per-request state. A request never has a prefill or decode "mode": it has
// `tokens` (prompt followed by the tokens generated so far) and `num_computed_tokens`, the length
// of the prefix whose KV is valid in its blocks; each step feeds it a slice of the rest. Prompt
// ingestion, chunked prefill, prefix-cache hits, recomputation after preemption and the
// rollback of rejected drafts are all that one catch-up loop (vLLM v1). Its block table and hash
// chain belong to the KvManager (kv/kv_manager.h), keyed by request_id.
// Invariants while running: 0 <= num_computed_tokens < num_tokens(); the block table covers at
// least positions [0, num_computed_tokens) and, between steps, at most [0, num_tokens()) (with
// kv_prealloc, the reserved length; while a step executes, also the drafts it feeds); exactly the
// full blocks of [0, num_computed_tokens) are committed; draft_tokens is empty unless only the last
// token is pending (num_computed_tokens + 1 == num_tokens()). While waiting (new or preempted) it
// holds no blocks, no drafts, and num_computed_tokens is 0. Owned by the Scheduler; read-only to
// everyone else.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "jisu/finish_reason.h"
#include "jisu/request_options.h"
#include "kv/eviction_policy.h"

namespace jisu {

using RequestId = int64_t;

enum class RequestStatus {
  kWaiting,    // queued, never run
  kRunning,    // admitted: holds blocks, scheduled when the budget allows
  kPreempted,  // was running, lost its blocks; queued again to recompute from token 0
  kFinished,   // done or cancelled; holds nothing
};

const char* RequestStatusName(RequestStatus s);

// What the engine hands to Scheduler::AddRequest (validated there).
struct NewRequest {
  RequestId request_id = 0;  // unique among live requests
  TenantId tenant = 0;       // >= 0; prefix-cache accounting and isolation
  // Among running requests, larger is served first and preempted last. Admission from the
  // queue is FIFO (preempted requests at its front) whatever the priority.
  int32_t priority = 0;
  std::vector<int32_t> prompt;
  int64_t max_tokens = 16;  // >= 1 tokens to generate
  std::string cache_salt;   // requests with different salts never share cached blocks
  // Leading prompt tokens that are system/developer content: full blocks inside this prefix are
  // committed to the prefix cache as BlockKind::kShared (kept in `shared` mode).
  int64_t num_shared_prefix_tokens = 0;
  // Resolved (RequestOptions::Over the engine's defaults). A step holds only requests of one
  // StepOptionsOf(options); KvCacheKeyOf(options) joins the salt in the prefix-cache key; the
  // attention variant goes with each of its scheduled sequences.
  RequestOptions options;
};

struct SchedRequest {
  RequestId request_id = 0;
  TenantId tenant = 0;
  int32_t priority = 0;
  int64_t arrival = 0;          // admission order to the queue: smaller arrived earlier
  std::vector<int32_t> tokens;  // [num_prompt_tokens + generated]
  int64_t num_prompt_tokens = 0;
  int64_t num_computed_tokens = 0;
  // Proposed continuation after the last token (speculative decoding), fed with the next decode
  // as far as budget and memory allow, and dropped after that step either way.
  std::vector<int32_t> draft_tokens;
  std::string cache_salt;
  std::string kv_key;    // KvCacheKeyOf(options)
  int32_t step_key = 0;  // the scheduler's id of StepOptionsOf(options)
  AttentionVariant attention = AttentionVariant::kAuto;
  // The last step that fed it (at arrival: the steps planned so far). The key whose requests
  // waited longest goes first (Scheduler::Schedule).
  int64_t served_at = 0;
  int64_t max_tokens = 0;
  int64_t num_shared_prefix_tokens = 0;
  RequestStatus status = RequestStatus::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;
  int64_t num_preemptions = 0;

  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()); }
  int64_t num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  std::span<const int32_t> prompt() const {
    return std::span<const int32_t>(tokens).first(static_cast<size_t>(num_prompt_tokens));
  }
  std::span<const int32_t> output() const {
    return std::span<const int32_t>(tokens).subspan(static_cast<size_t>(num_prompt_tokens));
  }
};

}  // namespace jisu
