#include "server/server_cpu.h"

#include <ctime>

#include "metrics/metrics_registry.h"

namespace jisu::server {
namespace {

constexpr size_t kStages = static_cast<size_t>(CpuStage::kCount);

struct Stopwatch {
  double last = 0;  // 0: the thread's start, so its first charge takes its whole history
  std::array<double, kStages> pending{};
};

thread_local Stopwatch t_watch;

}  // namespace

const char* CpuStageName(CpuStage s) {
  static constexpr const char* kNames[kStages] = {"http",   "parse", "prepare", "submit", "wait",
                                                  "stream", "write", "respond", "other"};
  const int i = static_cast<int>(s);
  return i >= 0 && i < static_cast<int>(kStages) ? kNames[i] : "other";
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void ServerCpu::Attach(MetricsRegistry* registry) {
  auto* family = registry->AddCounterFamily(
      "jisu:server_cpu_seconds_total",
      "CPU seconds (user + system) of the HTTP worker threads, by stage; added per request.",
      {"stage"});
  for (size_t i = 0; i < kStages; ++i) {
    counters_[i] = family->WithLabels({CpuStageName(static_cast<CpuStage>(i))});
  }
  attached_.store(true, std::memory_order_release);
}

void ServerCpu::Charge(CpuStage stage) {
  const double now = ThreadCpuSeconds();
  Stopwatch& w = t_watch;
  w.pending[static_cast<size_t>(stage)] += now - w.last;
  w.last = now;
}

void ServerCpu::ChargeAndFlush(CpuStage stage) {
  Charge(stage);
  if (!attached_.load(std::memory_order_acquire)) return;  // keep the totals for later
  Stopwatch& w = t_watch;
  for (size_t i = 0; i < kStages; ++i) {
    if (w.pending[i] > 0) counters_[i]->Inc(w.pending[i]);
    w.pending[i] = 0;
  }
}

}  // namespace jisu::server
