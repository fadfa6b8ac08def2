// CPU time the HTTP layer spends, by stage, exported as jisu:server_cpu_seconds_total{stage}.
// Why: the target is "server overhead (HTTP + JSON) <= 5% of engine time"; wall-clock
// comparisons on a 2-core machine mix in the client's CPU, so the server measures its own.
//
// Each HTTP worker thread keeps a thread-local stopwatch of its own CPU clock
// (CLOCK_THREAD_CPUTIME_ID, user + system, so socket writes count). Charge(stage) adds the CPU
// used since the previous mark to `stage`; every CPU nanosecond of a worker thread thus lands in
// exactly one stage (the first charge of a thread also takes its start-up). The totals go to
// the shared counters at the end of each request (Flush), not per token, so the hot path costs
// one clock read per mark and no atomic.
//
// Stages: http (cpp-httplib reading and parsing the request line, headers and body, and
// anything between requests), parse (JSON body into a GenerationRequest), prepare (chat template
// and tokenization), submit (engine submission), wait (waking up for engine events), stream
// (applying events and building chunk JSON), write (socket writes: SSE events, whole bodies),
// respond (building a non-streaming answer), other (health, metrics, models, errors).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace jisu {
class MetricsRegistry;
class Counter;
}  // namespace jisu

namespace jisu::server {

enum class CpuStage : int {
  kHttp = 0,
  kParse,
  kPrepare,
  kSubmit,
  kWait,
  kStream,
  kWrite,
  kRespond,
  kOther,
  kCount
};
const char* CpuStageName(CpuStage s);

// This thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID).
double ThreadCpuSeconds();

class ServerCpu {
 public:
  // Registers the counter family in `registry` (once; before any Flush reaches it).
  void Attach(MetricsRegistry* registry);

  // Charges this thread's CPU since its previous mark to `stage`.
  static void Charge(CpuStage stage);
  // Charges like Charge, then moves this thread's totals into the counters (if attached).
  void ChargeAndFlush(CpuStage stage);

 private:
  std::array<Counter*, static_cast<size_t>(CpuStage::kCount)> counters_{};
  std::atomic<bool> attached_{false};  // publishes counters_
};

}  // namespace jisu::server
