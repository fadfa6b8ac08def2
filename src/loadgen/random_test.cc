#include "loadgen/random.h"

#include <gtest/gtest.h>

#include <cmath>

namespace jisu::loadgen {
namespace {

TEST(LoadgenRandom, PoissonMeanRateAndGaps) {
  const double rate = 5;
  const size_t n = 20000;
  std::vector<double> t = PoissonArrivals(n, rate, 1234);
  ASSERT_EQ(t.size(), n);
  for (size_t i = 1; i < n; ++i) ASSERT_GT(t[i], t[i - 1]);
  // Mean gap 1/rate; its standard error is (1/rate)/sqrt(n) = 0.7%: 3% is far outside chance.
  EXPECT_NEAR(static_cast<double>(n) / t.back(), rate, 0.03 * rate);
  // Exponential gaps: the coefficient of variation is 1 (a fixed-interval process has 0).
  double sum = 0, sq = 0;
  for (size_t i = 0; i < n; ++i) {
    const double g = t[i] - (i ? t[i - 1] : 0);
    sum += g;
    sq += g * g;
  }
  const double mean = sum / n;
  const double sd = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(sd / mean, 1.0, 0.05);
}

TEST(LoadgenRandom, SameSeedSameArrivals) {
  EXPECT_EQ(PoissonArrivals(100, 2, 7), PoissonArrivals(100, 2, 7));
  EXPECT_NE(PoissonArrivals(100, 2, 7), PoissonArrivals(100, 2, 8));
}

TEST(LoadgenRandom, ZipfFrequencies) {
  const int64_t n = 50;
  ZipfSampler z(n, 1.1);
  double h = 0;
  for (int64_t k = 1; k <= n; ++k) h += 1 / std::pow(k, 1.1);
  EXPECT_NEAR(z.Probability(0), 1 / h, 1e-12);
  EXPECT_NEAR(z.Probability(9), 1 / std::pow(10, 1.1) / h, 1e-12);
  Rng rng(99);
  std::vector<int> count(n, 0);
  const int draws = 100000;
  for (int i = 0; i < draws; ++i) {
    const int64_t k = z.Sample(rng);
    ASSERT_GE(k, 0);
    ASSERT_LT(k, n);
    ++count[static_cast<size_t>(k)];
  }
  for (int64_t k : {0, 1, 4, 20}) {
    const double p = z.Probability(k);
    const double se = std::sqrt(p * (1 - p) / draws);
    EXPECT_NEAR(count[static_cast<size_t>(k)] / double(draws), p, 5 * se) << "rank " << k;
  }
}

}  // namespace
}  // namespace jisu::loadgen
