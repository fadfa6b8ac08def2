#include "loadgen/stats.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

namespace jisu::loadgen {

double PercentileSorted(const std::vector<double>& sorted, double q) {
  assert(!sorted.empty());
  q = std::clamp(q, 0.0, 100.0);
  const double rank = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary Summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.count = values.size();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.count);
  s.min = values.front();
  s.max = values.back();
  s.p50 = PercentileSorted(values, 50);
  s.p90 = PercentileSorted(values, 90);
  s.p99 = PercentileSorted(values, 99);
  return s;
}

}  // namespace jisu::loadgen
