// The serving engine: a thread-safe front (Submit, Cancel) and one loop thread that runs
// schedule -> forward -> sample -> emit, step after step, over the paged KV pool with
// continuous batching, chunked prefill, prefix caching and preemption (sched/, kv/).
// Outputs are delivered through each request's callback, called on the loop thread: it must
// return quickly (copy, enqueue, signal) and must not call back into the engine.
// With a Drafter (EngineOptions::drafter), greedy requests are fed its proposals with each decode
// and verified in the same forward pass (StepRunner): a step may then yield several tokens per
// request, each run through the request's OutputProcessor (EOS, stop strings, detokenizer,
// logprobs) in order, stopping at a finish, so outputs are exactly those of plain greedy decoding.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/forward_backend.h"
#include "engine/engine_metrics.h"
#include "engine/output_processor.h"
#include "engine/step_runner.h"
#include "engine/tenant_registry.h"
#include "grammar/grammar_compiler.h"
#include "jisu/request_options.h"
#include "jisu/status.h"
#include "kv/block_pool.h"
#include "kv/prefix_cache.h"
#include "metrics/metrics_registry.h"
#include "model/model.h"
#include "sampling/logits_top_n.h"
#include "sampling/sampler.h"
#include "sched/scheduler.h"
#include "spec/drafter.h"

namespace jisu {

struct EngineOptions {
  SchedulerOptions scheduler;  // token budget, max seqs, queue, chunking, block size, max len
  // KV pool size in blocks when the engine makes its own CPU backend; with a given backend
  // the backend's num_kv_blocks() is used.
  int64_t kv_blocks = 0;
  PrefixCacheMode prefix_cache = PrefixCacheMode::kShared;
  int num_threads = 0;  // CPU forward-pass threads when the engine makes its backend, 0 = all
  // --batch-window-ms: when nothing is running and a request arrives, wait up to this long
  // (or until max_seqs requests are in) to gather more arrivals before the first step, so
  // they are admitted together. 0: start at once.
  double batch_window_ms = 0;
  // Per-tenant metric series: tenants 0 .. max_tenant_labels-1 get their own label, the rest
  // share tenant="other" (bounds the cardinality of /metrics).
  int max_tenant_labels = 16;
  // What a request leaves at auto (RequestOptions::Over); checked against the backend and the
  // drafter by Create. Its own autos are the engine's policy: the measured matmul choice, draws
  // on the backend's device where it can (GPU) for rows without logprobs and penalties, dense
  // attention, the loaded weights, max_draft_tokens drafts where there is a drafter.
  RequestOptions defaults;
  // Speculative decoding: proposes drafts for greedy (temperature 0) requests at each decode
  // step, up to their window (RequestOptions::speculative; auto: max_draft_tokens); nullptr
  // (default): off. Other requests are never speculated on: verifying sampled requests needs
  // the rejection-sampling rule and the draft probabilities.
  std::shared_ptr<Drafter> drafter;
  int64_t max_draft_tokens = 4;  // [0, 64]
  Status Validate() const;
};

struct EngineRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  TenantId tenant = 0;
  int32_t priority = 0;
  std::string cache_salt;
  int64_t num_shared_prefix_tokens = 0;  // leading system/developer tokens
  // Logprob reporting (OpenAI logprobs/top_logprobs): -1 = off; n >= 0 = each sampled token's
  // log-probability plus the n most likely alternatives, from the model's raw distribution.
  int32_t top_logprobs = -1;
  // Checked at the edge (Engine::CheckOptions); Submit fills its autos from the defaults.
  RequestOptions options;
};

using OutputCallback = std::function<void(const EngineOutput&)>;

class Engine {
 public:
  // `model` must outlive the engine. Runs on `backend` (its block size must equal
  // options.scheduler.block_size); without one, on a CPU backend of options.kv_blocks blocks.
  static Result<std::unique_ptr<Engine>> Create(const Model& model, const EngineOptions& options,
                                                std::unique_ptr<ForwardBackend> backend = nullptr);
  ~Engine();  // stops the loop; unfinished requests get a kCancelled output

  // Validates and queues the request; the callback then receives its outputs. Errors that can
  // be seen at once (bad sampling params, prompt too long, queue full) are returned here. The
  // options are trusted: the edge checks them once, with CheckOptions.
  Result<RequestId> Submit(EngineRequest request, OutputCallback on_output);
  // Compiles a structured-output constraint for this model (cached: Submit then finds it) and
  // returns InvalidArgument with the reason when it does not compile. Thread-safe.
  Status CheckStructuredOutput(const StructuredOutput& constraint) const;
  // Whether this engine can run a request with these options (InvalidArgument naming the field
  // otherwise): ranges (RequestOptions::Validate), a weight set it holds, a matmul path its
  // backend has, a speculative window only with a drafter and for a greedy request.
  Status CheckOptions(const RequestOptions& options, const SamplingParams& sampling) const;
  // Cancels a request at any time; its blocks are freed before the next step. Unknown or
  // finished ids are ignored.
  void Cancel(RequestId request_id);

  const ForwardBackend& backend() const { return *backend_; }
  // The dense tenant id for an external user name (EngineRequest.tenant); thread-safe.
  TenantId InternTenant(std::string_view user) { return tenants_.Intern(user); }
  SchedulerStats scheduler_stats() const;
  BlockPoolStats pool_stats() const;
  PrefixCacheStats prefix_stats() const;
  // Per tenant that has looked up the prefix cache: hit tokens / prompt tokens and cached blocks
  // it alone owns (see PrefixCache::tenant_report); refreshed every 100 ms while busy and
  // whenever the engine goes idle.
  std::vector<TenantPrefixStats> tenant_prefix_stats() const;

  // The engine's metrics (engine_metrics.h), updated by the loop thread; thread-safe to read.
  MetricsRegistry& metrics() { return registry_; }
  // Prometheus text exposition (format 0.0.4) for GET /metrics.
  std::string MetricsText() const { return registry_.TextExposition(); }

 private:
  struct Live;  // per-request state owned by the loop thread
  Engine(const Model& model, const EngineOptions& options, std::unique_ptr<ForwardBackend> backend);
  void Loop();
  void Step();
  // Asks the drafter for up to `window` next drafts of request `id`, for the scheduler.
  void ProposeDrafts(RequestId id, Live* l, int64_t window);
  // --batch-window-ms: called with mu_ held when the loop wakes with arrivals while idle.
  void GatherArrivals(std::unique_lock<std::mutex>* lock);
  // The model's grammar compiler (vocabulary built on first use: engines without structured
  // output never pay for it).
  grammar::GrammarCompiler& grammars() const;
  Result<std::shared_ptr<const grammar::CompiledGrammar>> CompileConstraint(
      const StructuredOutput& constraint) const;

  const Model& model_;
  EngineOptions options_;
  std::unique_ptr<ForwardBackend> backend_;
  TenantRegistry tenants_;
  BlockPool blocks_;
  PrefixCache prefix_;
  Scheduler scheduler_;
  // Samples a step's rows in parallel when the backend has no host pool of its own (GPU).
  std::unique_ptr<ThreadPool> sample_pool_;
  StepRunner runner_;
  MetricsRegistry registry_;
  EngineMetrics metrics_;  // loop thread only (the registry it writes to is thread-safe)

  mutable std::mutex mu_;  // guards the inbox, the counters and the stats snapshots
  std::condition_variable wake_;
  struct Pending {
    RequestId id;
    EngineRequest request;
    OutputCallback callback;
    double submit_time;
    std::shared_ptr<const grammar::CompiledGrammar> grammar;  // request.sampling.structured
  };
  std::deque<Pending> inbox_;
  std::vector<RequestId> cancels_;
  bool stop_ = false;
  RequestId next_id_ = 1;
  SchedulerStats sched_snapshot_;
  BlockPoolStats pool_snapshot_;
  PrefixCacheStats prefix_snapshot_;
  std::vector<TenantPrefixStats> tenant_snapshot_;
  double tenant_snapshot_time_ = 0;

  mutable std::once_flag grammar_once_;
  mutable std::unique_ptr<grammar::GrammarCompiler> grammar_compiler_;

  std::map<RequestId, std::unique_ptr<Live>> live_;  // loop thread only
  std::thread thread_;
};

}  // namespace jisu
