// /metrics: the engine's registry (engine_metrics.h: vLLM names for queued and running requests
// and KV-cache usage, which the Gateway API Inference Extension's model-server protocol
// scrapes) plus the HTTP layer's series registered in that same registry once the engine
// exists: requests by endpoint and status, and generation requests in flight.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "engine/engine.h"
#include "metrics/metrics_registry.h"
#include "server/server_cpu.h"

namespace jisu::server {

class HttpMetrics {
 public:
  // Registers the HTTP series in `engine`'s registry; requests answered before are not counted.
  void Attach(Engine* engine);
  void CountRequest(const std::string& endpoint, int status);
  // The whole exposition ("" while loading).
  std::string Render(int64_t in_flight) const;
  ServerCpu& cpu() { return cpu_; }

 private:
  std::atomic<Engine*> engine_{nullptr};
  MetricsRegistry::Family<Counter>* requests_ = nullptr;  // set before engine_ is published
  Gauge* in_flight_ = nullptr;
  Counter* process_cpu_ = nullptr;  // process_cpu_seconds_total, advanced at each Render
  mutable std::mutex process_cpu_mu_;
  mutable double process_cpu_seen_ = 0;
  ServerCpu cpu_;
};

}  // namespace jisu::server
