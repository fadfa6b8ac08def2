// Summary statistics over latency samples: mean and linearly interpolated percentiles (the
// same definition as numpy's default, so figures compare with Python benchmark tools).
#pragma once

#include <cstddef>
#include <vector>

namespace jisu::loadgen {

struct Summary {
  size_t count = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
};

// q in [0, 100]. `sorted` must be ascending and non-empty.
double PercentileSorted(const std::vector<double>& sorted, double q);

// All zeros for an empty input.
Summary Summarize(std::vector<double> values);

}  // namespace jisu::loadgen
