#include "server/http_metrics.h"

namespace jisu::server {

void HttpMetrics::Attach(Engine* engine) {
  MetricsRegistry& r = engine->metrics();
  requests_ = r.AddCounterFamily("jisu:http_requests_total",
                                 "HTTP requests answered, by endpoint and status code.",
                                 {"endpoint", "status"});
  in_flight_ = r.AddGauge("jisu:http_requests_in_flight", "Generation requests being served.");
  engine_.store(engine, std::memory_order_release);
}

void HttpMetrics::CountRequest(const std::string& endpoint, int status) {
  if (engine_.load(std::memory_order_acquire) == nullptr) return;
  requests_->WithLabels({endpoint, std::to_string(status)})->Inc();
}

std::string HttpMetrics::Render(int64_t in_flight) const {
  const Engine* engine = engine_.load(std::memory_order_acquire);
  if (engine == nullptr) return "";
  in_flight_->Set(static_cast<double>(in_flight));
  return engine->MetricsText();
}

}  // namespace jisu::server
