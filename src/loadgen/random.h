// Seeded randomness for the load generator, defined here rather than through <random>'s
// distributions (whose algorithms differ between standard libraries), so a seed gives the same
// requests and arrival times on every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace jisu::loadgen {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  // splitmix64: small, fast, good enough statistically, fully specified.
  uint64_t Next();
  // Uniform in [0, 1).
  double Uniform();
  // Uniform in [0, n); n > 0.
  uint64_t Below(uint64_t n);
  // Exponential with the given rate (> 0).
  double Exponential(double rate);

 private:
  uint64_t state_;
};

// Ranks 0..n-1 with P(k) proportional to 1 / (k + 1)^s: rank 0 is the heaviest user.
class ZipfSampler {
 public:
  ZipfSampler(int64_t n, double s);
  int64_t Sample(Rng& rng) const;
  double Probability(int64_t k) const;

 private:
  std::vector<double> cdf_;
};

// Arrival offsets in seconds (ascending, first > 0) of a Poisson process at `rate` per second.
std::vector<double> PoissonArrivals(size_t n, double rate, uint64_t seed);

}  // namespace jisu::loadgen
