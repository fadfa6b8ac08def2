// The scheduler: the POLICY that decides, step by step, which requests run and how many tokens
// each is fed, who is admitted from the queue and who is preempted. Memory is the KvManager's
// (kv/kv_manager.h: block tables, prefix-cache lookups and commits, rollback) on top of the block
// pool and the prefix cache; the scheduler asks it for blocks and owns only request state.
//
// One step: Schedule() -> StepPlan -> (runner: forward + sample) -> ApplyStepOutput(StepOutput).
// Schedule():
//   1. Running requests, highest priority then earliest arrival first, each fed min(pending
//      tokens, max_chunk_tokens, remaining budget) tokens: a decode gets 1, an unfinished prefill
//      its next chunk. Blocks for those tokens are allocated; when the pool has none, the
//      running request with the lowest priority / latest arrival (the tail of that order) is
//      preempted by recomputation (blocks freed, num_computed_tokens reset to 0, back to the
//      front of the queue) and allocation retried. A step never fails.
//   2. If nothing was preempted, waiting requests are admitted in queue order while the budget,
//      max_seqs and the pool allow. On admission the prefix cache is asked for the longest
//      cached chain: those tokens are not recomputed. Admission never preempts, and stops at the
//      first request that does not fit (no overtaking: no starvation).
//   3. Drafts (SetDraftTokens) ride on the decodes scheduled in 1, in service order, with what
//      budget and blocks are left: as many as fit, the rest dropped. Speculation is last so that
//      it never preempts anyone nor delays an admission; it only uses slack.
// Step keys: the rows of one step run one weight set and one matmul path (StepOptions), so a step
// takes only requests of one key. Schedule() picks the key whose request has waited longest
// since it was last fed (served_at; ties by arrival) and runs 1-3
// over that key's requests only; when nothing of that key can run, the next key in that order
// (without admission: the first key's waiting requests were first in line). Each key is served
// within as many steps as there are keys, so none starves; with one key (the usual case) the
// step is exactly the one above.
// ApplyStepOutput(): per sequence, appends the accepted tokens (stopping at a finish, max_tokens
// or max_model_len), moves num_computed_tokens to cover exactly the KV that is valid (the fed
// token and the drafts that match the accepted tokens; the rejected drafts' slots are written
// again later), rolls back blocks no longer needed, commits full blocks of accepted tokens only,
// and finishes requests (freeing their blocks at once).
//
// Invariants (CheckInvariants, also while a plan executes): every block reference is in exactly one
// request's block table (the KvManager's); running requests <= max_seqs; a request is in exactly
// one of running / waiting, or gone once finished; see sched_request.h for the per-request ones.
// Not thread-safe: the engine loop thread owns the scheduler, the pool and the cache. Call
// AddRequest / SetDraftTokens between steps (after ApplyStepOutput); Cancel may also come while
// a plan is executing (its tokens in the output are then ignored).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "jisu/status.h"
#include "kv/block_pool.h"
#include "kv/kv_manager.h"
#include "kv/prefix_cache.h"
#include "sched/sched_request.h"
#include "sched/scheduler_options.h"
#include "sched/step_plan.h"

namespace jisu {

struct SchedulerStats {
  int64_t num_running = 0;
  int64_t num_waiting = 0;  // including preempted ones queued for recomputation
  int64_t num_steps = 0;
  int64_t last_step_tokens = 0;  // tokens scheduled by the last Schedule()
  int64_t last_step_seqs = 0;
  int64_t total_tokens_scheduled = 0;
  int64_t num_preemptions = 0;  // so far
  int64_t num_finished = 0;
  int64_t num_cancelled = 0;
  int64_t num_rejected = 0;      // AddRequest refused: queue full
  double kv_usage = 0;           // pool blocks in use / all blocks
  double kv_fragmentation = 0;   // over running requests: allocated-but-unfilled / allocated slots
  int64_t num_draft_tokens = 0;  // drafts fed so far
  int64_t num_accepted_draft_tokens = 0;  // of which accepted (their KV kept)
};

class Scheduler {
 public:
  // `pool` must outlive the scheduler; `cache` may be null (no prefix caching) and must then
  // also outlive it. Preconditions (asserted): options.Validate() is Ok, options.block_size ==
  // pool->block_size(), and the pool holds a max_model_len sequence (see ValidateFor).
  Scheduler(const SchedulerOptions& options, BlockPool* pool, PrefixCache* cache);

  // Checks the options against a pool shape: Validate() plus block_size agreement and enough
  // blocks for one sequence of max_model_len (else a lone request could preempt itself forever).
  static Status ValidateFor(const SchedulerOptions& options, const BlockPool& pool);

  // Queues a request. InvalidArgument: empty prompt, negative token id, max_tokens < 1, bad
  // tenant or shared-prefix count, duplicate live id; OutOfRange: prompt of max_model_len
  // tokens or more (no room to generate); ResourceExhausted: the waiting queue holds max_queue.
  // Its options are taken as resolved and valid (the engine checked them at its edge).
  Status AddRequest(NewRequest request);

  // Plans the next step (see the header comment). Must be followed by ApplyStepOutput before the
  // next Schedule (asserted). An empty plan means nothing can run (no requests).
  StepPlan Schedule();

  // Folds in the runner's result for the last plan: `output.sampled` holds each needs_logits
  // sequence's accepted tokens (see StepOutput; those of requests cancelled meanwhile are
  // ignored). Returns the requests that finished in this step, with their outputs.
  // InvalidArgument (and no change: the next Schedule re-plans the same tokens) if a
  // needs_logits request has no token, more than its drafts + 1, tokens not consecutive, or a
  // token comes for a request that did not need one.
  Result<std::vector<FinishedRequest>> ApplyStepOutput(const StepOutput& output);

  // Proposes `drafts` as the continuation of running request `request_id`, to be verified with
  // its next decode (replacing earlier drafts). A hint: fewer may be fed (budget, blocks,
  // max_tokens, max_model_len) and they are dropped after the next step that schedules the
  // request, or at once if it is not at a decode (waiting, or mid-prefill). The runner must
  // then verify them exactly (greedy): only the StepOutput contract above is checked here.
  // NotFound: no live request; InvalidArgument: a negative id, or a step is in flight.
  Status SetDraftTokens(RequestId request_id, std::vector<int32_t> drafts);

  // Frees the request at once, whatever its state. NotFound if no live request has this id.
  Status Cancel(RequestId request_id);

  SchedulerStats stats() const;
  const SchedulerOptions& options() const { return options_; }
  // Block tables and hash chains of the running requests (read-only).
  const KvManager& kv() const { return kv_; }
  // Null if no live request has this id.
  const SchedRequest* Find(RequestId request_id) const;
  int64_t num_running() const { return static_cast<int64_t>(running_.size()); }
  int64_t num_waiting() const { return static_cast<int64_t>(waiting_.size()); }
  bool idle() const { return running_.empty() && waiting_.empty(); }

  // Full consistency check, for tests (O(requests + blocks)). Assumes the scheduler is the only
  // holder of block references: pool ref counts must equal block-table occurrences.
  Status CheckInvariants() const;

 private:
  struct Slice {
    SchedRequest* request;
    int64_t num_tokens;      // fed, drafts included
    int64_t num_drafts = 0;  // the last num_drafts of them
  };

  // Tokens whose KV `r` may hold: its current tokens, or with kv_prealloc its whole possible
  // length min(prompt + max_tokens, max_model_len).
  int64_t ReservedTokens(const SchedRequest& r) const;
  // Tokens to feed `r` this step given `budget` (0: none fit).
  int64_t TokensToSchedule(const SchedRequest& r, int64_t budget) const;
  // The id of `options` among the step keys seen so far (a new one is added).
  int32_t InternStepKey(const StepOptions& options);
  // The live requests' keys, longest-waiting first (see the header comment).
  std::vector<int32_t> KeyOrder() const;
  // Steps 1-3 for the requests of `key`, into last_step_ and plan->preempted.
  void FillStep(int32_t key, bool admit, StepPlan* plan);
  // Extends a slice that reaches r's last known token with as many of r's drafts as fit.
  void AddDrafts(Slice* s, int64_t* budget);
  void Preempt(SchedRequest* r, StepPlan* plan);
  void ReleaseBlocks(SchedRequest* r);
  void InsertRunning(SchedRequest* r);
  bool TryAdmit(SchedRequest* r, int64_t budget, int64_t* num_tokens);
  void Finish(SchedRequest* r, FinishReason reason, std::vector<FinishedRequest>* finished);

  SchedulerOptions options_;
  BlockPool* pool_;
  KvManager kv_;
  std::unordered_map<RequestId, std::unique_ptr<SchedRequest>> requests_;  // live ones
  // Sorted by (priority desc, arrival asc): scheduled front to back, preempted from the back.
  std::vector<SchedRequest*> running_;
  std::deque<SchedRequest*> waiting_;         // FIFO; preempted requests go to the front
  std::vector<Slice> last_step_;              // what the last plan fed, until ApplyStepOutput
  std::vector<StepOptions> step_keys_;        // by step key id; few (weight sets x paths)
  std::vector<RequestId> cancelled_in_step_;  // cancelled while the plan was executing
  bool step_in_flight_ = false;
  int64_t next_arrival_ = 0;
  SchedulerStats stats_;
};

}  // namespace jisu
