// Prometheus text for /metrics: HTTP request counters by endpoint and status, and the engine's
// gauges under the names the Gateway API Inference Extension's model-server protocol scrapes
// (vLLM's: vllm:num_requests_waiting, vllm:num_requests_running, vllm:gpu_cache_usage_perc /
// vllm:kv_cache_usage_perc, vllm:cache_config_info), so an existing endpoint picker can balance
// jisu replicas by queue and KV-cache load.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "engine/engine.h"

namespace jisu::server {

class HttpMetrics {
 public:
  void CountRequest(const std::string& endpoint, int status);
  void CountTokens(int64_t prompt, int64_t generation);
  // Whole exposition; `engine` may be null (still loading).
  std::string Render(const Engine* engine, const std::string& model_name, int64_t block_size,
                     int64_t in_flight) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  int64_t prompt_tokens_ = 0;
  int64_t generation_tokens_ = 0;
};

}  // namespace jisu::server
