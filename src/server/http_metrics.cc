#include "server/http_metrics.h"

#include <sys/resource.h>

namespace jisu::server {
namespace {

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * t.tv_usec; };
  return s(u.ru_utime) + s(u.ru_stime);
}

}  // namespace

void HttpMetrics::Attach(Engine* engine) {
  MetricsRegistry& r = engine->metrics();
  requests_ = r.AddCounterFamily("jisu:http_requests_total",
                                 "HTTP requests answered, by endpoint and status code.",
                                 {"endpoint", "status"});
  in_flight_ = r.AddGauge("jisu:http_requests_in_flight", "Generation requests being served.");
  // The Prometheus client libraries' standard name; with jisu:server_cpu_seconds_total it
  // tells the server's share of the process's CPU.
  process_cpu_ = r.AddCounter("process_cpu_seconds_total",
                              "Total user and system CPU time spent by the process, seconds.");
  cpu_.Attach(&r);
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
  {
    std::lock_guard<std::mutex> lock(process_cpu_mu_);
    const double now = ProcessCpuSeconds();
    if (now > process_cpu_seen_) process_cpu_->Inc(now - process_cpu_seen_);
    process_cpu_seen_ = std::max(process_cpu_seen_, now);
  }
  return engine->MetricsText();
}

}  // namespace jisu::server
