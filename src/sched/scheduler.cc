#include "sched/scheduler.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <string>
#include <utility>

#include "kv/kv_cache.h"

namespace jisu {

const char* RequestStatusName(RequestStatus s) {
  switch (s) {
    case RequestStatus::kWaiting:
      return "waiting";
    case RequestStatus::kRunning:
      return "running";
    case RequestStatus::kPreempted:
      return "preempted";
    case RequestStatus::kFinished:
      return "finished";
  }
  return "unknown";
}

namespace {

// Order of service: higher priority first, then earlier arrival.
bool RunsBefore(const SchedRequest* a, const SchedRequest* b) {
  if (a->priority != b->priority) return a->priority > b->priority;
  return a->arrival < b->arrival;
}

}  // namespace

Status Scheduler::ValidateFor(const SchedulerOptions& options, const BlockPool& pool) {
  JISU_RETURN_IF_ERROR(options.Validate());
  if (options.block_size != pool.block_size()) {
    return Status::InvalidArgument(
        "scheduler option block_size = " + std::to_string(options.block_size) +
        " differs from the block pool's " + std::to_string(pool.block_size()));
  }
  const int64_t need = BlocksForTokens(options.max_model_len, options.block_size);
  if (need > pool.num_blocks()) {
    return Status::InvalidArgument(
        "scheduler option max_model_len = " + std::to_string(options.max_model_len) + " needs " +
        std::to_string(need) + " KV blocks but the pool has " + std::to_string(pool.num_blocks()) +
        " (raise the KV memory or lower max_model_len)");
  }
  return Status::Ok();
}

Scheduler::Scheduler(const SchedulerOptions& options, BlockPool* pool, PrefixCache* cache)
    : options_(options), pool_(pool), kv_(pool, cache) {
  assert(pool_ != nullptr);
  assert(ValidateFor(options_, *pool_).ok());
  running_.reserve(static_cast<size_t>(options_.max_seqs));
}

Status Scheduler::AddRequest(NewRequest request) {
  const std::string id = "request " + std::to_string(request.request_id);
  if (request.prompt.empty()) return Status::InvalidArgument(id + ": empty prompt");
  if (static_cast<int64_t>(request.prompt.size()) >= options_.max_model_len) {
    return Status::OutOfRange(id + ": prompt of " + std::to_string(request.prompt.size()) +
                              " tokens leaves no room to generate within max_model_len = " +
                              std::to_string(options_.max_model_len));
  }
  for (size_t i = 0; i < request.prompt.size(); ++i) {
    if (request.prompt[i] < 0) {
      return Status::InvalidArgument(id + ": negative token id " +
                                     std::to_string(request.prompt[i]) + " at prompt position " +
                                     std::to_string(i));
    }
  }
  if (request.max_tokens < 1) {
    return Status::InvalidArgument(id + ": max_tokens = " + std::to_string(request.max_tokens) +
                                   " must be >= 1");
  }
  if (request.tenant < 0) {
    return Status::InvalidArgument(id + ": tenant = " + std::to_string(request.tenant) +
                                   " must be >= 0");
  }
  if (request.num_shared_prefix_tokens < 0) {
    return Status::InvalidArgument(id + ": num_shared_prefix_tokens must be >= 0");
  }
  if (requests_.count(request.request_id)) {
    return Status::InvalidArgument(id + ": id already in use by a live request");
  }
  if (static_cast<int64_t>(waiting_.size()) >= options_.max_queue) {
    ++stats_.num_rejected;
    return Status::ResourceExhausted(
        "queue full: " + std::to_string(waiting_.size()) +
        " requests waiting (max_queue = " + std::to_string(options_.max_queue) + "); retry later");
  }
  auto r = std::make_unique<SchedRequest>();
  r->request_id = request.request_id;
  r->tenant = request.tenant;
  r->priority = request.priority;
  r->arrival = next_arrival_++;
  r->num_prompt_tokens = static_cast<int64_t>(request.prompt.size());
  r->tokens = std::move(request.prompt);
  r->cache_salt = std::move(request.cache_salt);
  r->kv_key = KvCacheKeyOf(request.options);
  r->step_key = InternStepKey(StepOptionsOf(request.options));
  r->attention = request.options.attention;
  r->served_at = stats_.num_steps;
  r->max_tokens = request.max_tokens;
  r->num_shared_prefix_tokens = std::min(request.num_shared_prefix_tokens, r->num_prompt_tokens);
  r->status = RequestStatus::kWaiting;
  waiting_.push_back(r.get());
  requests_.emplace(r->request_id, std::move(r));
  return Status::Ok();
}

int64_t Scheduler::ReservedTokens(const SchedRequest& r) const {
  if (!options_.kv_prealloc) return r.num_tokens();
  return std::max(r.num_tokens(),
                  std::min(r.num_prompt_tokens + r.max_tokens, options_.max_model_len));
}

int64_t Scheduler::TokensToSchedule(const SchedRequest& r, int64_t budget) const {
  const int64_t pending = r.num_tokens() - r.num_computed_tokens;
  assert(pending >= 1);
  if (!options_.chunked_prefill) return pending <= budget ? pending : 0;
  int64_t n = std::min(pending, budget);
  if (options_.max_chunk_tokens > 0) n = std::min(n, options_.max_chunk_tokens);
  return n;
}

void Scheduler::ReleaseBlocks(SchedRequest* r) {
  kv_.Free(r->request_id);
  r->num_computed_tokens = 0;
  r->draft_tokens.clear();
}

void Scheduler::Preempt(SchedRequest* r, StepPlan* plan) {
  assert(!running_.empty() && running_.back() == r);
  running_.pop_back();
  ReleaseBlocks(r);
  r->status = RequestStatus::kPreempted;
  ++r->num_preemptions;
  ++stats_.num_preemptions;
  waiting_.push_front(r);
  plan->preempted.push_back(r->request_id);
}

void Scheduler::InsertRunning(SchedRequest* r) {
  running_.insert(std::upper_bound(running_.begin(), running_.end(), r, RunsBefore), r);
}

bool Scheduler::TryAdmit(SchedRequest* r, int64_t budget, int64_t* num_tokens) {
  assert(!kv_.Tracks(r->request_id) && r->num_computed_tokens == 0);
  const KvSeqInfo info{r->tenant, r->cache_salt, r->kv_key, r->num_shared_prefix_tokens};
  r->num_computed_tokens = kv_.Admit(r->request_id, info, r->tokens);
  const int64_t n = TokensToSchedule(*r, budget);
  const int64_t end = options_.kv_prealloc ? ReservedTokens(*r) : r->num_computed_tokens + n;
  if (n == 0 || !kv_.Allocate(r->request_id, end)) {
    ReleaseBlocks(r);  // drops the prefix hit's references
    return false;
  }
  *num_tokens = n;
  return true;
}

int32_t Scheduler::InternStepKey(const StepOptions& options) {
  for (size_t k = 0; k < step_keys_.size(); ++k) {
    if (step_keys_[k] == options) return static_cast<int32_t>(k);
  }
  step_keys_.push_back(options);
  return static_cast<int32_t>(step_keys_.size() - 1);
}

std::vector<int32_t> Scheduler::KeyOrder() const {
  if (step_keys_.size() <= 1) return {0};
  // A key's age: its longest-waiting request's (served_at, arrival); arrival breaks ties in
  // queue order, so a key never overtakes an older arrival of another key that waited as long.
  using Age = std::pair<int64_t, int64_t>;
  std::vector<Age> ages(step_keys_.size(), Age{INT64_MAX, INT64_MAX});
  auto see = [&](const SchedRequest* r) {
    Age& a = ages[static_cast<size_t>(r->step_key)];
    a = std::min(a, Age{r->served_at, r->arrival});
  };
  for (const SchedRequest* r : running_) see(r);
  for (const SchedRequest* r : waiting_) see(r);
  std::vector<int32_t> keys;
  for (size_t k = 0; k < ages.size(); ++k) {
    if (ages[k].first != INT64_MAX) keys.push_back(static_cast<int32_t>(k));
  }
  std::sort(keys.begin(), keys.end(), [&](int32_t a, int32_t b) {
    return ages[static_cast<size_t>(a)] < ages[static_cast<size_t>(b)];
  });
  return keys;
}

void Scheduler::FillStep(int32_t key, bool admit, StepPlan* plan) {
  int64_t budget = options_.max_batch_tokens;

  // 1. Running requests, in service order. Victims come from the tail, which is never already
  // scheduled this step (it is at or after index i), so the plan needs no undo. They may be of
  // another key.
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    SchedRequest* r = running_[i];
    if (r->step_key != key) continue;
    const int64_t n = TokensToSchedule(*r, budget);
    if (n == 0) continue;
    bool self_preempted = false;
    while (!kv_.Allocate(r->request_id, r->num_computed_tokens + n)) {
      SchedRequest* victim = running_.back();
      Preempt(victim, plan);
      if (victim == r) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;  // r was the tail: nothing after it
    last_step_.push_back({r, n});
    budget -= n;
  }

  // 2. Admission, only if memory was not short this step. Requests of other keys keep their
  // place in the queue; within the key, no overtaking.
  if (admit && plan->preempted.empty()) {
    for (auto it = waiting_.begin(); it != waiting_.end() && budget > 0 &&
                                     static_cast<int64_t>(running_.size()) < options_.max_seqs;) {
      SchedRequest* r = *it;
      if (r->step_key != key) {
        ++it;
        continue;
      }
      int64_t n = 0;
      if (!TryAdmit(r, budget, &n)) break;
      it = waiting_.erase(it);
      r->status = RequestStatus::kRunning;
      InsertRunning(r);
      last_step_.push_back({r, n});
      budget -= n;
    }
  }

  // 3. Drafts, with what is left.
  for (Slice& s : last_step_) {
    if (budget <= 0) break;
    AddDrafts(&s, &budget);
  }
}

StepPlan Scheduler::Schedule() {
  assert(!step_in_flight_ && "ApplyStepOutput must follow each Schedule");
  StepPlan plan;
  last_step_.clear();
  bool first = true;
  for (int32_t key : KeyOrder()) {
    FillStep(key, /*admit=*/first, &plan);
    first = false;
    if (!last_step_.empty()) {
      plan.options = step_keys_[static_cast<size_t>(key)];
      break;
    }
  }

  // Materialize: spans into the tables are taken now that no table grows any more this step.
  int64_t total = 0;
  for (const Slice& s : last_step_) total += s.num_tokens;
  plan.token_ids.reserve(static_cast<size_t>(total));
  plan.sequences.reserve(last_step_.size());
  for (const Slice& s : last_step_) {
    const SchedRequest& r = *s.request;
    ScheduledSequence seq;
    seq.request_id = r.request_id;
    seq.num_tokens = s.num_tokens;
    seq.token_offset = plan.num_tokens();
    seq.start_position = r.num_computed_tokens;
    seq.num_draft_tokens = s.num_drafts;
    seq.attention = r.attention;
    const int64_t end = r.num_computed_tokens + s.num_tokens;
    const int64_t known_end = end - s.num_drafts;
    seq.block_table = kv_.block_table(r.request_id)
                          .first(static_cast<size_t>(BlocksForTokens(end, options_.block_size)));
    plan.token_ids.insert(plan.token_ids.end(), r.tokens.begin() + r.num_computed_tokens,
                          r.tokens.begin() + known_end);
    plan.token_ids.insert(plan.token_ids.end(), r.draft_tokens.begin(),
                          r.draft_tokens.begin() + s.num_drafts);
    if (known_end == r.num_tokens()) {
      seq.first_logits_row = static_cast<int64_t>(plan.logits_rows.size());
      seq.num_logits_rows = 1 + s.num_drafts;
      for (int64_t row = plan.num_tokens() - seq.num_logits_rows; row < plan.num_tokens(); ++row) {
        plan.logits_rows.push_back(row);
      }
    }
    plan.sequences.push_back(seq);
  }
  assert(plan.num_tokens() <= options_.max_batch_tokens);
  assert(static_cast<int64_t>(plan.sequences.size()) <= options_.max_seqs);

  cancelled_in_step_.clear();
  ++stats_.num_steps;
  for (const Slice& s : last_step_) s.request->served_at = stats_.num_steps;
  stats_.last_step_tokens = plan.num_tokens();
  stats_.last_step_seqs = static_cast<int64_t>(plan.sequences.size());
  stats_.total_tokens_scheduled += plan.num_tokens();
  step_in_flight_ = true;
  return plan;
}

void Scheduler::AddDrafts(Slice* s, int64_t* budget) {
  SchedRequest& r = *s->request;
  if (r.draft_tokens.empty() || r.num_computed_tokens + s->num_tokens != r.num_tokens()) return;
  int64_t k = std::min<int64_t>(static_cast<int64_t>(r.draft_tokens.size()), *budget);
  if (options_.max_chunk_tokens > 0) k = std::min(k, options_.max_chunk_tokens - s->num_tokens);
  // k drafts can yield k + 1 tokens: all of them must fit max_tokens and the context, so that
  // the runner never produces a token that ApplyStepOutput would have to drop.
  k = std::min(k, r.max_tokens - r.num_output_tokens() - 1);
  k = std::min(k, options_.max_model_len - r.num_tokens() - 1);
  k = std::min(k, kv_.MaxAllocatableTokens(r.request_id) - r.num_tokens());
  if (k <= 0) return;
  const bool ok = kv_.Allocate(r.request_id, r.num_tokens() + k);
  assert(ok);
  (void)ok;
  s->num_tokens += k;
  s->num_drafts = k;
  *budget -= k;
}

void Scheduler::Finish(SchedRequest* r, FinishReason reason,
                       std::vector<FinishedRequest>* finished) {
  if (r->status == RequestStatus::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), r));
  } else {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), r));
  }
  ReleaseBlocks(r);
  r->status = RequestStatus::kFinished;
  r->finish_reason = reason;
  if (reason == FinishReason::kCancelled) {
    ++stats_.num_cancelled;
  } else {
    ++stats_.num_finished;
  }
  if (finished) {
    FinishedRequest f;
    f.request_id = r->request_id;
    f.reason = reason;
    f.output_tokens.assign(r->output().begin(), r->output().end());
    f.num_preemptions = r->num_preemptions;
    finished->push_back(std::move(f));
  }
  const RequestId id = r->request_id;
  requests_.erase(id);  // destroys *r
}

Result<std::vector<FinishedRequest>> Scheduler::ApplyStepOutput(const StepOutput& output) {
  assert(step_in_flight_ && "ApplyStepOutput without a Schedule");
  step_in_flight_ = false;

  // Validate before mutating, so that a bad output leaves the state as it was.
  struct Run {
    size_t begin;
    size_t count;
  };
  std::unordered_map<RequestId, Run> runs;
  runs.reserve(last_step_.size());
  const std::vector<SampledToken>& sampled = output.sampled;
  for (size_t i = 0; i < sampled.size();) {
    size_t j = i + 1;
    while (j < sampled.size() && sampled[j].request_id == sampled[i].request_id) ++j;
    if (!runs.emplace(sampled[i].request_id, Run{i, j - i}).second) {
      return Status::InvalidArgument("step output: tokens for request " +
                                     std::to_string(sampled[i].request_id) +
                                     " are not consecutive");
    }
    i = j;
  }
  size_t matched = 0;
  for (const Slice& s : last_step_) {
    const SchedRequest& r = *s.request;
    const bool needs = r.num_computed_tokens + s.num_tokens - s.num_drafts == r.num_tokens();
    const auto it = runs.find(r.request_id);
    const bool has = it != runs.end();
    if (needs && !has) {
      return Status::InvalidArgument("step output: no token for request " +
                                     std::to_string(r.request_id));
    }
    if (has && !needs) {
      return Status::InvalidArgument("step output: request " + std::to_string(r.request_id) +
                                     " did not need a token this step");
    }
    if (has && static_cast<int64_t>(it->second.count) > 1 + s.num_drafts) {
      return Status::InvalidArgument("step output: " + std::to_string(it->second.count) +
                                     " tokens for request " + std::to_string(r.request_id) +
                                     ", which was fed " + std::to_string(s.num_drafts) +
                                     " drafts (at most " + std::to_string(1 + s.num_drafts) + ")");
    }
    matched += has ? 1 : 0;
  }
  for (RequestId id : cancelled_in_step_) matched += runs.count(id);
  if (matched != runs.size()) {
    return Status::InvalidArgument("step output: token for a request not in the step");
  }

  std::vector<FinishedRequest> finished;
  for (const Slice& s : last_step_) {
    SchedRequest* r = s.request;
    const int64_t known_end = r->num_computed_tokens + s.num_tokens - s.num_drafts;
    if (known_end < r->num_tokens()) {  // a prefill chunk short of the end: all its KV is valid
      assert(s.num_drafts == 0);
      r->draft_tokens.clear();  // drafts are a one-step proposal
      r->num_computed_tokens = known_end;
      kv_.Commit(r->request_id, r->tokens, r->num_computed_tokens);
      continue;
    }
    const Run run = runs.at(r->request_id);
    const int64_t base = r->num_tokens();
    FinishReason reason = FinishReason::kNone;
    for (size_t j = 0; j < run.count && reason == FinishReason::kNone; ++j) {
      const SampledToken& t = sampled[run.begin + j];
      r->tokens.push_back(t.token_id);
      if (t.finished) {
        reason = FinishReason::kStop;
      } else if (r->num_output_tokens() >= r->max_tokens ||
                 r->num_tokens() >= options_.max_model_len) {
        reason = FinishReason::kLength;
      }
    }
    // Draft i's KV (position base + i) is valid if drafts 0..i equal the tokens now at those
    // positions; the last token stays pending (its KV is computed with the next step).
    const int64_t appended = r->num_tokens() - base;
    int64_t valid = 0;
    while (valid < s.num_drafts && valid < appended - 1 &&
           r->draft_tokens[static_cast<size_t>(valid)] ==
               r->tokens[static_cast<size_t>(base + valid)]) {
      ++valid;
    }
    r->num_computed_tokens = base + valid;
    r->draft_tokens.clear();
    stats_.num_draft_tokens += s.num_drafts;
    stats_.num_accepted_draft_tokens += valid;
    kv_.Commit(r->request_id, r->tokens, r->num_computed_tokens);
    if (reason != FinishReason::kNone) {
      Finish(r, reason, &finished);
    } else {
      kv_.Truncate(r->request_id, ReservedTokens(*r));  // the rejected drafts' blocks
    }
  }
  last_step_.clear();
  cancelled_in_step_.clear();
  return finished;
}

Status Scheduler::SetDraftTokens(RequestId request_id, std::vector<int32_t> drafts) {
  if (step_in_flight_) {
    return Status::InvalidArgument("draft tokens for request " + std::to_string(request_id) +
                                   " while a step is in flight");
  }
  auto it = requests_.find(request_id);
  if (it == requests_.end()) {
    return Status::NotFound("draft tokens: no live request " + std::to_string(request_id));
  }
  for (int32_t t : drafts) {
    if (t < 0) {
      return Status::InvalidArgument("draft tokens: negative token id " + std::to_string(t));
    }
  }
  SchedRequest* r = it->second.get();
  if (r->status != RequestStatus::kRunning || r->num_computed_tokens + 1 != r->num_tokens()) {
    r->draft_tokens.clear();
    return Status::Ok();
  }
  r->draft_tokens = std::move(drafts);
  return Status::Ok();
}

Status Scheduler::Cancel(RequestId request_id) {
  auto it = requests_.find(request_id);
  if (it == requests_.end()) {
    return Status::NotFound("cancel: no live request " + std::to_string(request_id));
  }
  SchedRequest* r = it->second.get();
  // A cancel between Schedule and ApplyStepOutput: forget r's slice of the step, and its tokens.
  if (step_in_flight_) cancelled_in_step_.push_back(request_id);
  std::erase_if(last_step_, [r](const Slice& s) { return s.request == r; });
  Finish(r, FinishReason::kCancelled, nullptr);
  return Status::Ok();
}

const SchedRequest* Scheduler::Find(RequestId request_id) const {
  auto it = requests_.find(request_id);
  return it == requests_.end() ? nullptr : it->second.get();
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s = stats_;
  s.num_running = static_cast<int64_t>(running_.size());
  s.num_waiting = static_cast<int64_t>(waiting_.size());
  s.kv_usage = pool_->stats().Usage();
  // BlockPool::Fragmentation's formula, without temporaries (the engine calls this every step).
  // Slots reserved for this step's tokens count as used: they are filled by the forward pass.
  int64_t slots = 0, used = 0;
  for (const SchedRequest* r : running_) {
    const int64_t n = kv_.num_blocks(r->request_id) * options_.block_size;
    slots += n;
    used += std::min<int64_t>(r->num_tokens(), n);
  }
  s.kv_fragmentation = slots > 0 ? double(slots - used) / double(slots) : 0.0;
  return s;
}

Status Scheduler::CheckInvariants() const {
  auto fail = [](const SchedRequest& r, const std::string& what) {
    return Status::Internal("request " + std::to_string(r.request_id) + " (" +
                            RequestStatusName(r.status) + "): " + what);
  };
  if (static_cast<int64_t>(running_.size()) > options_.max_seqs) {
    return Status::Internal("more running requests than max_seqs");
  }
  if (running_.size() + waiting_.size() != requests_.size()) {
    return Status::Internal("live requests are not exactly the running plus the waiting ones");
  }
  if (!std::is_sorted(running_.begin(), running_.end(), RunsBefore)) {
    return Status::Internal("running requests out of service order");
  }
  for (const Slice& s : last_step_) {
    if (s.request->step_key != last_step_[0].request->step_key) {
      return Status::Internal("a step holds requests of different step keys");
    }
  }
  if (kv_.num_sequences() != static_cast<int64_t>(running_.size())) {
    return Status::Internal("the KV manager tracks " + std::to_string(kv_.num_sequences()) +
                            " sequences for " + std::to_string(running_.size()) +
                            " running requests");
  }
  for (const SchedRequest* r : running_) {
    if (r->status != RequestStatus::kRunning) return fail(*r, "in the running list");
    if (r->num_computed_tokens >= r->num_tokens() || r->num_computed_tokens < 0) {
      return fail(*r, "num_computed_tokens out of [0, num_tokens)");
    }
    if (!kv_.Tracks(r->request_id)) return fail(*r, "running without KV state");
    const int64_t n = kv_.num_blocks(r->request_id);
    // While a plan executes, the drafts it feeds hold slots past the known tokens.
    const int64_t in_flight = step_in_flight_ ? static_cast<int64_t>(r->draft_tokens.size()) : 0;
    if (n < BlocksForTokens(r->num_computed_tokens, options_.block_size) ||
        n > BlocksForTokens(std::max(ReservedTokens(*r), r->num_tokens() + in_flight),
                            options_.block_size)) {
      return fail(*r, "block table does not fit num_computed_tokens / num_tokens");
    }
    if (kv_.num_committed_blocks(r->request_id) != r->num_computed_tokens / options_.block_size) {
      return fail(*r, "committed blocks lag the computed tokens");
    }
    if (!r->draft_tokens.empty() && r->num_computed_tokens + 1 != r->num_tokens()) {
      return fail(*r, "drafts while more than the last token is pending");
    }
  }
  for (const SchedRequest* r : waiting_) {
    if (r->status != RequestStatus::kWaiting && r->status != RequestStatus::kPreempted) {
      return fail(*r, "in the waiting queue");
    }
    if (kv_.Tracks(r->request_id) || r->num_computed_tokens != 0 || !r->draft_tokens.empty()) {
      return fail(*r, "waiting with blocks, computed tokens or drafts");
    }
  }
  // Every pool reference is in exactly one table (the scheduler's KV manager is the pool's only
  // client): pool ref counts equal table occurrences.
  return kv_.CheckInvariants(/*sole_client=*/true);
}

}  // namespace jisu
