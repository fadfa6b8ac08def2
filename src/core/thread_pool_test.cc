#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace jisu {
namespace {

TEST(ThreadPoolTest, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.ParallelFor(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i]++;
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
  }
}

TEST(ThreadPoolTest, RunOnAllRunsEachThreadIndexOnceRepeatedly) {
  ThreadPool pool(3);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::atomic<int>> seen(3);
    pool.RunOnAll([&](int t) { seen[t]++; });
    for (int t = 0; t < 3; ++t) ASSERT_EQ(seen[t].load(), 1);
  }
}

}  // namespace
}  // namespace jisu
