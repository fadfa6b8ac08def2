#include "loadgen/stats.h"

#include <gtest/gtest.h>

namespace jisu::loadgen {
namespace {

TEST(LoadgenStats, PercentilesInterpolateLikeNumpy) {
  // numpy.percentile([1..10], [50, 90, 99]) = 5.5, 9.1, 9.91
  Summary s = Summarize({10, 3, 1, 7, 2, 9, 4, 8, 6, 5});
  EXPECT_EQ(s.count, 10u);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_NEAR(s.p50, 5.5, 1e-12);
  EXPECT_NEAR(s.p90, 9.1, 1e-12);
  EXPECT_NEAR(s.p99, 9.91, 1e-12);
}

TEST(LoadgenStats, EdgeCases) {
  Summary one = Summarize({42});
  EXPECT_DOUBLE_EQ(one.p50, 42);
  EXPECT_DOUBLE_EQ(one.p99, 42);
  Summary none = Summarize({});
  EXPECT_EQ(none.count, 0u);
  EXPECT_DOUBLE_EQ(none.p90, 0);
  std::vector<double> two = {0, 100};
  EXPECT_DOUBLE_EQ(PercentileSorted(two, 0), 0);
  EXPECT_DOUBLE_EQ(PercentileSorted(two, 100), 100);
  EXPECT_DOUBLE_EQ(PercentileSorted(two, 25), 25);
  // A heavy tail moves p99 but not p50.
  std::vector<double> v(100, 1.0);
  v[99] = 1000;
  Summary t = Summarize(v);
  EXPECT_DOUBLE_EQ(t.p50, 1);
  EXPECT_NEAR(t.p99, 1 + 0.01 * 999, 1e-9);  // rank 98.01 between 1 and 1000
  EXPECT_NEAR(t.mean, (99 + 1000) / 100.0, 1e-12);
}

}  // namespace
}  // namespace jisu::loadgen
