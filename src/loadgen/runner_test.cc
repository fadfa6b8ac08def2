#include "loadgen/runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace jisu::loadgen {
namespace {

TEST(LoadgenRunner, ConcurrencyCapAndArrivalTimes) {
  std::atomic<int> in_flight{0}, peak{0};
  auto send = [&](size_t) {
    const int now = ++in_flight;
    int p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    --in_flight;
    return RequestResult{};
  };
  RunOptions closed;
  closed.max_concurrency = 3;
  RunOutcome a = RunLoad(12, closed, send);
  ASSERT_EQ(a.results.size(), 12u);
  EXPECT_EQ(peak.load(), 3);               // never more than the cap, and the cap is reached
  EXPECT_GE(a.wall_s, 4 * 0.030 - 0.002);  // 12 requests, 3 at a time, 30 ms each
  for (size_t i = 0; i < a.results.size(); ++i) EXPECT_EQ(a.results[i].index, i);

  // Open loop: nothing starts before its arrival time.
  peak = 0;
  RunOptions open;
  open.arrivals = {0.0, 0.2, 0.2, 0.4};  // gaps far above the 30 ms requests
  RunOutcome b = RunLoad(4, open, send);
  ASSERT_EQ(b.results.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_GE(b.results[i].start_s, open.arrivals[i]);
  EXPECT_EQ(peak.load(), 2);  // the two at 200 ms overlap; the others do not

  // --duration: requests arriving after it are not started.
  RunOptions cut = open;
  cut.duration_s = 0.3;
  RunOutcome c = RunLoad(4, cut, send);
  EXPECT_EQ(c.results.size(), 3u);
  EXPECT_EQ(c.not_started, 1u);
}

}  // namespace
}  // namespace jisu::loadgen
