#include "engine/engine_metrics.h"

#include <algorithm>

namespace jisu {
namespace {

// Latency buckets (seconds) wide enough for a 2-core CPU and a GPU alike.
std::vector<double> LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
          0.75,  1.0,    2.5,   5.0,  7.5,  10,   20,   40,   80,  160};
}
std::vector<double> StepBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10};
}

}  // namespace

EngineMetrics::EngineMetrics(MetricsRegistry* r, int64_t block_size, int64_t num_blocks,
                             int max_tenant_labels)
    : max_tenant_labels_(std::max(0, max_tenant_labels)) {
  running_ = r->AddGauge("vllm:num_requests_running", "Number of requests in the running batch.");
  waiting_ = r->AddGauge("vllm:num_requests_waiting",
                         "Number of requests waiting to be scheduled (queued or preempted).");
  queue_length_ = r->AddGauge("jisu:queue_length",
                              "Requests waiting: the scheduler's queue plus not yet handed over.");
  kv_usage_ = r->AddGauge("vllm:kv_cache_usage_perc",
                          "KV-cache usage: blocks in use / all blocks. 1 means 100 percent.");
  gpu_cache_usage_ = r->AddGauge("vllm:gpu_cache_usage_perc",
                                 "KV-cache usage (same value as vllm:kv_cache_usage_perc).");
  kv_blocks_used_ = r->AddGauge("jisu:kv_blocks_in_use", "KV blocks referenced by sequences.");
  kv_blocks_total_ = r->AddGauge("jisu:kv_blocks_total", "KV blocks in the pool.");
  kv_fragmentation_ =
      r->AddGauge("jisu:kv_fragmentation_ratio",
                  "Allocated-but-unused token slots / allocated slots over running sequences.");
  cached_blocks_ =
      r->AddGauge("jisu:prefix_cache_blocks", "KV blocks registered in the prefix cache.");
  cached_blocks_multi_ = r->AddGauge("jisu:prefix_cache_multi_tenant_blocks",
                                     "Cached KV blocks used by more than one tenant.");
  r->AddGaugeFamily("vllm:cache_config_info", "KV cache configuration.",
                    {"block_size", "num_gpu_blocks"})
      ->WithLabels({std::to_string(block_size), std::to_string(num_blocks)})
      ->Set(1);
  preemptions_ = r->AddCounter("vllm:num_preemptions_total", "Cumulative preemptions.");
  evictions_ =
      r->AddCounter("jisu:prefix_cache_evictions_total", "Cached KV blocks evicted for memory.");
  prefix_queries_ = r->AddCounter("vllm:prefix_cache_queries_total",
                                  "Prompt tokens looked up in the prefix cache.");
  prefix_hits_ =
      r->AddCounter("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.");
  prompt_tokens_ = r->AddCounter("vllm:prompt_tokens_total",
                                 "Prompt tokens of admitted requests (cached ones included).");
  cached_prompt_tokens_ =
      r->AddCounter("jisu:prompt_tokens_cached_total",
                    "Prompt tokens served from the prefix cache at admission (not recomputed).");
  generation_tokens_ = r->AddCounter("vllm:generation_tokens_total", "Generated tokens.");
  steps_ = r->AddCounter("jisu:engine_steps_total", "Engine steps run.");
  device_mask_seconds_ = r->AddCounter(
      "jisu:device_mask_fill_seconds_total",
      "Host time filling structured-output token masks for rows drawn on the device, seconds "
      "(during the forward pass).");
  ttft_ = r->AddHistogram("vllm:time_to_first_token_seconds", "Submit to first token, seconds.",
                          LatencyBuckets());
  tpot_ = r->AddHistogram("vllm:time_per_output_token_seconds",
                          "Per request: (end - first token) / (output tokens - 1), seconds.",
                          LatencyBuckets());
  e2e_ = r->AddHistogram("vllm:e2e_request_latency_seconds", "Submit to finish, seconds.",
                         LatencyBuckets());
  step_time_ =
      r->AddHistogram("jisu:step_duration_seconds",
                      "Engine step (schedule, forward, sample, apply), seconds.", StepBuckets());
  sched_time_ = r->AddHistogram("jisu:scheduler_duration_seconds",
                                "Scheduler time per step (Schedule + ApplyStepOutput), seconds.",
                                StepBuckets());
  iteration_tokens_ = r->AddHistogram("vllm:iteration_tokens_total", "Tokens fed per step.",
                                      ExponentialBuckets(1, 2, 14));
  step_seqs_ = r->AddHistogram("jisu:iteration_sequences", "Sequences per step.",
                               ExponentialBuckets(1, 2, 10));
  auto* fin = r->AddCounterFamily("jisu:requests_finished_total", "Finished requests by reason.",
                                  {"finished_reason"});
  finished_stop_ = fin->WithLabels({"stop"});
  finished_length_ = fin->WithLabels({"length"});
  finished_cancelled_ = fin->WithLabels({"cancelled"});
  finished_error_ = fin->WithLabels({"error"});
  auto* ok = r->AddCounterFamily("vllm:request_success_total",
                                 "Requests finished normally, by reason.", {"finished_reason"});
  success_stop_ = ok->WithLabels({"stop"});
  success_length_ = ok->WithLabels({"length"});

  auto* tp = r->AddCounterFamily("jisu:tenant_prompt_tokens_total",
                                 "Prompt tokens of admitted requests, per tenant.", {"tenant"});
  auto* tc =
      r->AddCounterFamily("jisu:tenant_prompt_tokens_cached_total",
                          "Prompt tokens served from the prefix cache, per tenant.", {"tenant"});
  auto* tb = r->AddGaugeFamily("jisu:tenant_prefix_cache_blocks",
                               "Cached KV blocks owned by one tenant alone.", {"tenant"});
  for (int slot = 0; slot <= max_tenant_labels_; ++slot) {
    const std::string label = slot < max_tenant_labels_ ? std::to_string(slot) : "other";
    tenant_prompt_tokens_.push_back(tp->WithLabels({label}));
    tenant_cached_tokens_.push_back(tc->WithLabels({label}));
    tenant_cached_blocks_.push_back(tb->WithLabels({label}));
  }
  kv_blocks_total_->Set(static_cast<double>(num_blocks));
}

void EngineMetrics::OnStep(double step_seconds, double scheduler_seconds, int64_t tokens,
                           int64_t seqs) {
  steps_->Inc();
  step_time_->Observe(step_seconds);
  sched_time_->Observe(scheduler_seconds);
  iteration_tokens_->Observe(static_cast<double>(tokens));
  step_seqs_->Observe(static_cast<double>(seqs));
}

void EngineMetrics::OnAdmitted(TenantId tenant, int64_t prompt_tokens, int64_t cached_tokens) {
  const int slot = TenantSlot(tenant);
  prompt_tokens_->Inc(static_cast<double>(prompt_tokens));
  cached_prompt_tokens_->Inc(static_cast<double>(cached_tokens));
  tenant_prompt_tokens_[static_cast<size_t>(slot)]->Inc(static_cast<double>(prompt_tokens));
  tenant_cached_tokens_[static_cast<size_t>(slot)]->Inc(static_cast<double>(cached_tokens));
}

void EngineMetrics::OnFinished(FinishReason reason, double e2e_seconds, double ttft_seconds,
                               int64_t num_output_tokens) {
  if (reason == FinishReason::kStop) {
    finished_stop_->Inc();
    success_stop_->Inc();
  } else if (reason == FinishReason::kLength) {
    finished_length_->Inc();
    success_length_->Inc();
  } else if (reason == FinishReason::kCancelled) {
    finished_cancelled_->Inc();
  } else {
    finished_error_->Inc();
  }
  if (reason != FinishReason::kStop && reason != FinishReason::kLength)
    return;  // latencies of completed requests only
  e2e_->Observe(e2e_seconds);
  if (ttft_seconds >= 0 && num_output_tokens > 1) {
    tpot_->Observe((e2e_seconds - ttft_seconds) / static_cast<double>(num_output_tokens - 1));
  }
}

void EngineMetrics::UpdateState(const SchedulerStats& sched, const BlockPoolStats& pool,
                                const PrefixCacheStats& prefix, const BlockPool& blocks,
                                int64_t queued) {
  running_->Set(static_cast<double>(sched.num_running));
  waiting_->Set(static_cast<double>(sched.num_waiting + queued));
  queue_length_->Set(static_cast<double>(sched.num_waiting + queued));
  kv_usage_->Set(pool.Usage());
  gpu_cache_usage_->Set(pool.Usage());
  kv_blocks_used_->Set(static_cast<double>(pool.num_in_use));
  kv_fragmentation_->Set(sched.kv_fragmentation);
  cached_blocks_->Set(static_cast<double>(pool.num_cached));
  const int64_t multi = blocks.num_cached_owned_by(kMultiTenant);
  cached_blocks_multi_->Set(static_cast<double>(multi));
  int64_t labelled = 0;
  for (int t = 0; t < max_tenant_labels_; ++t) {
    const int64_t n = blocks.num_cached_owned_by(t);
    labelled += n;
    tenant_cached_blocks_[static_cast<size_t>(t)]->Set(static_cast<double>(n));
  }
  tenant_cached_blocks_.back()->Set(static_cast<double>(pool.num_cached - multi - labelled));
  preemptions_->Inc(static_cast<double>(sched.num_preemptions - last_preemptions_));
  evictions_->Inc(static_cast<double>(pool.num_evictions - last_evictions_));
  prefix_queries_->Inc(static_cast<double>(prefix.total.query_tokens - last_queries_));
  prefix_hits_->Inc(static_cast<double>(prefix.total.hit_tokens - last_hits_));
  last_preemptions_ = sched.num_preemptions;
  last_evictions_ = pool.num_evictions;
  last_queries_ = prefix.total.query_tokens;
  last_hits_ = prefix.total.hit_tokens;
}

}  // namespace jisu
