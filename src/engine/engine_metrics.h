// The engine's metrics, registered in the engine's MetricsRegistry and updated from the engine
// loop thread through a few hooks (engine.cc). Names follow vLLM where vLLM has the metric
// (the Gateway API Inference Extension scrapes vllm:num_requests_waiting,
// vllm:num_requests_running and vllm:kv_cache_usage_perc / vllm:gpu_cache_usage_perc), jisu:
// otherwise. Every hook is allocation-free: label children are created here, at construction.
//
// Per-tenant series are bounded: tenants 0 .. max_tenant_labels-1 get their own `tenant` label,
// all others share tenant="other" (tenant ids are interned densely by the server, so the first
// tenants seen get labels).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jisu/finish_reason.h"
#include "kv/block_pool.h"
#include "kv/prefix_cache.h"
#include "metrics/metrics_registry.h"
#include "sched/scheduler.h"

namespace jisu {

class EngineMetrics {
 public:
  EngineMetrics(MetricsRegistry* registry, int64_t block_size, int64_t num_blocks,
                int max_tenant_labels);

  // A step ran: whole step (schedule + forward + sample + apply), of which scheduler time
  // (Schedule + ApplyStepOutput), tokens fed and sequences in it.
  void OnStep(double step_seconds, double scheduler_seconds, int64_t tokens, int64_t seqs);
  // A request was first scheduled: its prompt length and the part served by the prefix cache.
  void OnAdmitted(TenantId tenant, int64_t prompt_tokens, int64_t cached_tokens);
  void OnTokensGenerated(int64_t n) { generation_tokens_->Inc(static_cast<double>(n)); }
  // Host time a step spent filling the token masks of rows drawn on the device (it overlaps
  // the forward pass).
  void OnDeviceMasks(double seconds) { device_mask_seconds_->Inc(seconds); }
  void OnFirstToken(double ttft_seconds) { ttft_->Observe(ttft_seconds); }
  // ttft_seconds < 0: no token was produced.
  void OnFinished(FinishReason reason, double e2e_seconds, double ttft_seconds,
                  int64_t num_output_tokens);
  // State after a loop iteration. `queued`: submitted but not yet handed to the scheduler.
  void UpdateState(const SchedulerStats& sched, const BlockPoolStats& pool,
                   const PrefixCacheStats& prefix, const BlockPool& blocks, int64_t queued);

 private:
  int TenantSlot(TenantId t) const {
    return t >= 0 && t < max_tenant_labels_ ? t : max_tenant_labels_;
  }

  int max_tenant_labels_;
  Gauge *running_, *waiting_, *queue_length_, *kv_usage_, *gpu_cache_usage_, *kv_blocks_used_,
      *kv_blocks_total_, *kv_fragmentation_, *cached_blocks_, *cached_blocks_multi_;
  Counter *preemptions_, *evictions_, *prefix_queries_, *prefix_hits_, *prompt_tokens_,
      *cached_prompt_tokens_, *generation_tokens_, *steps_, *device_mask_seconds_;
  Histogram *ttft_, *tpot_, *e2e_, *step_time_, *sched_time_, *iteration_tokens_, *step_seqs_;
  Counter *finished_stop_, *finished_length_, *finished_cancelled_, *finished_error_;
  Counter *success_stop_, *success_length_;
  std::vector<Counter*> tenant_prompt_tokens_, tenant_cached_tokens_;  // [slot]
  std::vector<Gauge*> tenant_cached_blocks_;                           // [slot]
  // Last cumulative values seen, to feed counters with deltas.
  int64_t last_preemptions_ = 0, last_evictions_ = 0, last_queries_ = 0, last_hits_ = 0;
};

}  // namespace jisu
