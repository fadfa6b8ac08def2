#include "engine/engine.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <limits>

#include "backend/cpu/cpu_backend.h"
#include "tokenizer/tokenizer.h"

namespace jisu {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

struct Engine::Live {
  Live(const EngineRequest& r, OutputCallback cb, const Model& model, double t,
       std::shared_ptr<const grammar::CompiledGrammar> grammar)
      : request(r),
        callback(std::move(cb)),
        output(r.sampling, r.top_logprobs, model.tokenizer(), model.eos_ids(),
               static_cast<int32_t>(model.config().vocab_size), std::move(grammar)),
        submit_time(t) {}
  EngineRequest request;
  OutputCallback callback;
  OutputProcessor output;  // sampler, stop strings, detokenizer, logprobs, finish
  double submit_time;
  double first_token_time = 0;
  int64_t cached_tokens = -1;   // set when first scheduled
  std::vector<int32_t> drafts;  // the drafter's proposal (scratch)
};

Status EngineOptions::Validate() const {
  JISU_RETURN_IF_ERROR(scheduler.Validate());
  if (num_threads < 0) return Status::InvalidArgument("engine: num_threads must be >= 0");
  if (!(batch_window_ms >= 0 && batch_window_ms <= 10000)) {
    return Status::InvalidArgument("engine: batch_window_ms must be in [0, 10000]");
  }
  if (max_tenant_labels < 0 || max_tenant_labels > 1024) {
    return Status::InvalidArgument("engine: max_tenant_labels must be in [0, 1024]");
  }
  if (max_draft_tokens < 0 || max_draft_tokens > RequestOptions::kMaxSpeculative) {
    return Status::InvalidArgument("engine: max_draft_tokens must be in [0, 64]");
  }
  if (Status s = defaults.Validate(); !s.ok()) {
    return Status::InvalidArgument("engine: default " + s.message());
  }
  if (defaults.speculative.value_or(0) > 0 && !drafter) {
    return Status::InvalidArgument("engine: a default speculative window needs a drafter");
  }
  return Status::Ok();
}

namespace {

// Today every engine holds one weight set, the loaded weights, named "". Sets made at load
// (issue 33's quantized ones) are added here and in the backend (ForwardBatch::options).
bool HasWeightSet(std::string_view name) { return name.empty(); }

// The checks that depend on the engine, for a request's options or the defaults.
Status CheckAgainst(const RequestOptions& o, const ForwardBackend& backend, bool has_drafter) {
  if (!HasWeightSet(o.weights)) {
    return Status::InvalidArgument("weights names no weight set of this engine ('" + o.weights +
                                   "'); it holds only the loaded weights (\"\")");
  }
  if (o.matmul != MatmulPath::kAuto && !backend.HasMatmulPaths()) {
    return Status::InvalidArgument(std::string("matmul '") + MatmulPathName(o.matmul) +
                                   "' selects a CPU matmul path; this backend (" +
                                   backend.description() + ") has one, so only 'auto'");
  }
  if (o.speculative.value_or(0) > 0 && !has_drafter) {
    return Status::InvalidArgument(
        "speculative needs a drafter, and this engine has none; use 0 or leave it out");
  }
  return Status::Ok();
}

}  // namespace

Status Engine::CheckOptions(const RequestOptions& options, const SamplingParams& sampling) const {
  JISU_RETURN_IF_ERROR(options.Validate());
  JISU_RETURN_IF_ERROR(CheckAgainst(options, *backend_, options_.drafter != nullptr));
  if (options.speculative.value_or(0) > 0 && sampling.temperature != 0.0f) {
    return Status::InvalidArgument(
        "speculative needs a greedy request (temperature 0): only its drafts are verified "
        "exactly");
  }
  return Status::Ok();
}

Result<std::unique_ptr<Engine>> Engine::Create(const Model& model, const EngineOptions& options,
                                               std::unique_ptr<ForwardBackend> backend) {
  if (!model.has_weights()) return Status::InvalidArgument("engine: the model has no weights");
  JISU_RETURN_IF_ERROR(options.Validate());
  if (options.scheduler.max_model_len > model.config().max_position) {
    return Status::InvalidArgument("engine: max_model_len exceeds the model's context of " +
                                   std::to_string(model.config().max_position));
  }
  if (!backend) {
    JISU_RETURN_IF_ERROR(BlockPool::Validate(options.kv_blocks, options.scheduler.block_size));
    CpuBackendOptions cpu{options.kv_blocks, options.scheduler.block_size, options.num_threads};
    cpu.weights.matmul = options.defaults.matmul;
    JISU_ASSIGN_OR_RETURN(backend, CpuBackend::Create(model, cpu));
  }
  if (backend->kv_block_size() != options.scheduler.block_size) {
    return Status::InvalidArgument(
        "engine: the backend's KV block size differs from the "
        "scheduler's");
  }
  JISU_RETURN_IF_ERROR(BlockPool::Validate(backend->num_kv_blocks(), options.scheduler.block_size));
  if (Status s = CheckAgainst(options.defaults, *backend, options.drafter != nullptr); !s.ok()) {
    return Status::InvalidArgument("engine: default " + s.message());
  }
  std::unique_ptr<Engine> engine(new Engine(model, options, std::move(backend)));
  JISU_RETURN_IF_ERROR(Scheduler::ValidateFor(options.scheduler, engine->blocks_));
  engine->thread_ = std::thread([e = engine.get()] { e->Loop(); });
  return engine;
}

Engine::Engine(const Model& model, const EngineOptions& options,
               std::unique_ptr<ForwardBackend> backend)
    : model_(model),
      options_(options),
      backend_(std::move(backend)),
      blocks_(static_cast<int32_t>(backend_->num_kv_blocks()),
              static_cast<int32_t>(options.scheduler.block_size)),
      prefix_(&blocks_, options.prefix_cache),
      scheduler_(options.scheduler, &blocks_, &prefix_),
      sample_pool_(backend_->host_pool() ? nullptr
                                         : std::make_unique<ThreadPool>(static_cast<int>(std::clamp(
                                               std::thread::hardware_concurrency(), 1u, 8u)))),
      runner_(*backend_, backend_->host_pool() ? backend_->host_pool() : sample_pool_.get()),
      metrics_(&registry_, options.scheduler.block_size, backend_->num_kv_blocks(),
               options.max_tenant_labels) {}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

grammar::GrammarCompiler& Engine::grammars() const {
  std::call_once(grammar_once_, [this] {
    auto vocab = grammar::TokenVocab::FromTokenizer(
        model_.tokenizer(), static_cast<int32_t>(model_.config().vocab_size), model_.eos_ids());
    grammar_compiler_ = std::make_unique<grammar::GrammarCompiler>(std::move(vocab));
  });
  return *grammar_compiler_;
}

Result<std::shared_ptr<const grammar::CompiledGrammar>> Engine::CompileConstraint(
    const StructuredOutput& constraint) const {
  return grammars().Compile(constraint);
}

Status Engine::CheckStructuredOutput(const StructuredOutput& constraint) const {
  if (!constraint.enabled()) return Status::Ok();
  return CompileConstraint(constraint).status();
}

Result<RequestId> Engine::Submit(EngineRequest request, OutputCallback on_output) {
  JISU_RETURN_IF_ERROR(request.sampling.Validate());
  if (request.prompt.empty()) return Status::InvalidArgument("the prompt is empty");
  if (static_cast<int64_t>(request.prompt.size()) >= options_.scheduler.max_model_len) {
    return Status::OutOfRange("prompt of " + std::to_string(request.prompt.size()) +
                              " tokens does not fit the context of " +
                              std::to_string(options_.scheduler.max_model_len) + " tokens");
  }
  const int64_t vocab = model_.config().vocab_size;
  for (int32_t id : request.prompt) {
    if (id < 0 || id >= vocab) return Status::InvalidArgument("prompt token id out of range");
  }
  if (request.sampling.max_tokens < 1) return Status::InvalidArgument("max_tokens must be >= 1");
  for (const auto& [id, bias] : request.sampling.logit_bias) {
    if (id >= vocab) {
      return Status::InvalidArgument("logit_bias token id " + std::to_string(id) +
                                     " is not below the vocabulary size " + std::to_string(vocab));
    }
  }
  // Compiled here, at admission (cached per constraint text), so a bad constraint is refused
  // before it is queued and the loop thread never compiles.
  std::shared_ptr<const grammar::CompiledGrammar> compiled;
  if (request.sampling.structured.enabled()) {
    JISU_ASSIGN_OR_RETURN(compiled, CompileConstraint(request.sampling.structured));
  }
  // Per-tenant state is indexed by id: only interned (small, dense) ids are accepted.
  if (request.tenant < 0 || request.tenant >= tenants_.max_tenants()) {
    return Status::InvalidArgument("tenant id " + std::to_string(request.tenant) +
                                   " out of range (intern user names with InternTenant)");
  }
  request.options = request.options.Over(options_.defaults);
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_) return Status::Unavailable("engine is shutting down");
  if (static_cast<int64_t>(inbox_.size()) + sched_snapshot_.num_waiting >=
      options_.scheduler.max_queue) {
    return Status::ResourceExhausted("queue full (" + std::to_string(options_.scheduler.max_queue) +
                                     " waiting requests)");
  }
  const RequestId id = next_id_++;
  inbox_.push_back(
      Pending{id, std::move(request), std::move(on_output), Now(), std::move(compiled)});
  wake_.notify_one();
  return id;
}

void Engine::Cancel(RequestId request_id) {
  std::lock_guard<std::mutex> lock(mu_);
  cancels_.push_back(request_id);
  wake_.notify_one();
}

SchedulerStats Engine::scheduler_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sched_snapshot_;
}
BlockPoolStats Engine::pool_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pool_snapshot_;
}
PrefixCacheStats Engine::prefix_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return prefix_snapshot_;
}
std::vector<TenantPrefixStats> Engine::tenant_prefix_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tenant_snapshot_;
}

void Engine::GatherArrivals(std::unique_lock<std::mutex>* lock) {
  if (options_.batch_window_ms <= 0 || inbox_.empty() || !scheduler_.idle()) return;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double, std::milli>(options_.batch_window_ms);
  wake_.wait_until(*lock, deadline, [&] {
    return stop_ || static_cast<int64_t>(inbox_.size()) >= options_.scheduler.max_seqs;
  });
}

void Engine::Loop() {
  for (;;) {
    std::deque<Pending> inbox;
    std::vector<RequestId> cancels;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] {
        return stop_ || !inbox_.empty() || !cancels_.empty() || !scheduler_.idle();
      });
      if (stop_) break;
      GatherArrivals(&lock);
      if (stop_) break;
      inbox.swap(inbox_);
      cancels.swap(cancels_);
    }
    for (Pending& p : inbox) {
      NewRequest r;
      r.request_id = p.id;
      r.tenant = p.request.tenant;
      r.priority = p.request.priority;
      r.prompt = p.request.prompt;
      r.max_tokens = p.request.sampling.max_tokens;
      r.cache_salt = p.request.cache_salt;
      r.num_shared_prefix_tokens = p.request.num_shared_prefix_tokens;
      r.options = p.request.options;
      Status s = scheduler_.AddRequest(std::move(r));
      if (!s.ok()) {
        EngineOutput out;
        out.request_id = p.id;
        out.finished = true;
        out.finish_reason = FinishReason::kError;
        out.error = s;
        metrics_.OnFinished(out.finish_reason, Now() - p.submit_time, -1, 0);
        p.callback(out);
        continue;
      }
      live_[p.id] = std::make_unique<Live>(p.request, std::move(p.callback), model_, p.submit_time,
                                           std::move(p.grammar));
    }
    for (RequestId id : cancels) {
      auto it = live_.find(id);
      if (it == live_.end()) continue;
      (void)scheduler_.Cancel(id);
      EngineOutput out;
      out.request_id = id;
      out.finished = true;
      out.finish_reason = FinishReason::kCancelled;
      out.elapsed_seconds = Now() - it->second->submit_time;
      metrics_.OnFinished(out.finish_reason, out.elapsed_seconds, -1, 0);
      it->second->callback(out);
      live_.erase(it);
      if (options_.drafter) options_.drafter->Forget(id);
    }
    if (!scheduler_.idle()) Step();
    std::lock_guard<std::mutex> lock(mu_);
    sched_snapshot_ = scheduler_.stats();
    pool_snapshot_ = blocks_.stats();
    prefix_snapshot_ = prefix_.stats();
    // O(tenants): at most every 100 ms while busy, and once idle (so the last state is exact).
    const double now = Now();
    if (scheduler_.idle() || now - tenant_snapshot_time_ >= 0.1) {
      tenant_snapshot_time_ = now;
      tenant_snapshot_.resize(static_cast<size_t>(prefix_.num_tenants()));
      for (size_t t = 0; t < tenant_snapshot_.size(); ++t) {
        tenant_snapshot_[t] = prefix_.tenant_report(static_cast<TenantId>(t));
      }
    }
    metrics_.UpdateState(sched_snapshot_, pool_snapshot_, prefix_snapshot_, blocks_,
                         static_cast<int64_t>(inbox_.size()));
  }
  for (auto& [id, live] : live_) {
    (void)scheduler_.Cancel(id);
    EngineOutput out;
    out.request_id = id;
    out.finished = true;
    out.finish_reason = FinishReason::kCancelled;
    live->callback(out);
    if (options_.drafter) options_.drafter->Forget(id);
  }
  live_.clear();
}

void Engine::ProposeDrafts(RequestId id, Live* l, int64_t window) {
  const SchedRequest* r = scheduler_.Find(id);
  if (!r) return;
  options_.drafter->Propose(id, r->tokens, window, &l->drafts);
  if (static_cast<int64_t>(l->drafts.size()) > window) {
    l->drafts.resize(static_cast<size_t>(window));
  }
  // A proposal is a guess: an id the model cannot take ends it rather than failing the step.
  const int32_t vocab = static_cast<int32_t>(model_.config().vocab_size);
  const auto bad = std::find_if(l->drafts.begin(), l->drafts.end(),
                                [&](int32_t t) { return t < 0 || t >= vocab; });
  l->drafts.erase(bad, l->drafts.end());
  // Drafts the grammar refuses would only be rejected by verification (the masked row cannot
  // pick them): not feeding them saves the slots.
  l->output.TrimDrafts(&l->drafts);
  if (!l->drafts.empty()) (void)scheduler_.SetDraftTokens(id, l->drafts);
}

void Engine::Step() {
  const double step_start = Now();
  StepPlan plan = scheduler_.Schedule();
  double sched_seconds = Now() - step_start;
  if (plan.empty()) return;
  for (const ScheduledSequence& s : plan.sequences) {
    Live& l = *live_.at(s.request_id);
    if (l.cached_tokens < 0) {
      l.cached_tokens = s.start_position;
      metrics_.OnAdmitted(l.request.tenant, static_cast<int64_t>(l.request.prompt.size()),
                          l.cached_tokens);
    }
  }
  // Rows without logprobs and penalties are drawn on the device when the backend can (only
  // token ids come back) unless the request asks for the host; the draw is taken from the
  // request's generator either way. A grammar's mask and logit_bias go with the row. The rows
  // of a sequence fed drafts are all drawn, and verification reads them in turn: only greedy
  // requests are speculated on, and a greedy draw takes nothing from the generator, so a row
  // verification never reads changes nothing.
  auto plan_rows = [&](RequestId id, std::span<RowSampling> rows) {
    Live& l = *live_.at(id);
    if (l.request.options.sampling == SamplingPlacement::kHost || l.output.NeedsHostLogits()) {
      return;
    }
    if (rows.size() > 1 && l.output.params().temperature != 0.0f) return;
    for (RowSampling& row : rows) l.output.PlanDeviceRow(&row);
  };
  auto fill_masks = [&](RequestId id, std::span<const int32_t> drafts, uint32_t* masks,
                        size_t words) {
    live_.at(id)->output.FillGrammarMasks(drafts, masks, words);
  };
  auto sample = [&](RequestId id, float* logits, int32_t device_token) {
    const SchedRequest* r = scheduler_.Find(id);
    return live_.at(id)->output.OnToken(logits, device_token, r->prompt(), r->output());
  };
  auto out = runner_.Run(plan, plan_rows, fill_masks, sample);
  if (!out.ok()) {
    // A failed forward pass fails the requests of this step; the engine keeps serving.
    for (const ScheduledSequence& s : plan.sequences) {
      auto it = live_.find(s.request_id);
      if (it == live_.end()) continue;
      (void)scheduler_.Cancel(s.request_id);
      EngineOutput o;
      o.request_id = s.request_id;
      o.finished = true;
      o.finish_reason = FinishReason::kError;
      o.error = out.status();
      metrics_.OnFinished(o.finish_reason, Now() - it->second->submit_time, -1, 0);
      it->second->callback(o);
      live_.erase(it);
      if (options_.drafter) options_.drafter->Forget(s.request_id);
    }
    // Close the step: the scheduler expects ApplyStepOutput after each Schedule. Every request
    // of the step was cancelled above, so there is nothing left to apply.
    [[maybe_unused]] auto closed = scheduler_.ApplyStepOutput(StepOutput{});
    assert(closed.ok() && closed->empty());
    return;
  }
  const double apply_start = Now();
  auto done = scheduler_.ApplyStepOutput(*out);
  sched_seconds += Now() - apply_start;
  std::map<RequestId, FinishReason> finished;
  if (done.ok()) {
    for (const FinishedRequest& f : *done) finished[f.request_id] = f.reason;
  }
  const double now = Now();
  for (size_t i = 0; i < out->sampled.size(); ++i) {
    const SampledToken& t = out->sampled[i];
    // A request's accepted tokens are consecutive and all in step_tokens: one output for them.
    if (i > 0 && out->sampled[i - 1].request_id == t.request_id) continue;
    auto it = live_.find(t.request_id);
    if (it == live_.end()) continue;
    Live& l = *it->second;
    if (l.first_token_time == 0) {
      l.first_token_time = now;
      metrics_.OnFirstToken(now - l.submit_time);
    }
    EngineOutput o;
    o.request_id = t.request_id;
    auto f = finished.find(t.request_id);
    const FinishReason reason =
        l.output.Emit(f != finished.end() ? f->second : FinishReason::kNone, &o);
    metrics_.OnTokensGenerated(static_cast<int64_t>(o.token_ids.size()));
    o.num_prompt_tokens = static_cast<int64_t>(l.request.prompt.size());
    o.num_cached_prompt_tokens = std::max<int64_t>(0, l.cached_tokens);
    o.ttft_seconds = l.first_token_time - l.submit_time;
    o.elapsed_seconds = now - l.submit_time;
    if (reason != FinishReason::kNone) {
      // The scheduler finishes at the same token; should it not have, it lets the request go.
      if (f == finished.end()) (void)scheduler_.Cancel(t.request_id);
      metrics_.OnFinished(reason, o.elapsed_seconds, o.ttft_seconds, l.output.num_output_tokens());
    }
    l.callback(o);
    if (o.finished) {
      live_.erase(it);
      if (options_.drafter) options_.drafter->Forget(t.request_id);
    } else if (options_.drafter && l.output.params().temperature == 0.0f) {
      const int64_t window = l.request.options.speculative.value_or(options_.max_draft_tokens);
      if (window > 0) ProposeDrafts(t.request_id, &l, window);
    }
  }
  if (runner_.last_mask_seconds() > 0) metrics_.OnDeviceMasks(runner_.last_mask_seconds());
  metrics_.OnStep(Now() - step_start, sched_seconds, plan.num_tokens(),
                  static_cast<int64_t>(plan.sequences.size()));
}

}  // namespace jisu
