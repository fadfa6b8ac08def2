#include "loadgen/random.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace jisu::loadgen {

uint64_t Rng::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

uint64_t Rng::Below(uint64_t n) {
  assert(n > 0);
  return static_cast<uint64_t>(Uniform() * static_cast<double>(n)) % n;
}

double Rng::Exponential(double rate) { return -std::log1p(-Uniform()) / rate; }

ZipfSampler::ZipfSampler(int64_t n, double s) {
  assert(n > 0);
  cdf_.resize(static_cast<size_t>(n));
  double total = 0;
  for (int64_t k = 0; k < n; ++k) {
    total += 1.0 / std::pow(static_cast<double>(k + 1), s);
    cdf_[static_cast<size_t>(k)] = total;
  }
  for (double& c : cdf_) c /= total;
  cdf_.back() = 1.0;
}

int64_t ZipfSampler::Sample(Rng& rng) const {
  const double u = rng.Uniform();
  return std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin();
}

double ZipfSampler::Probability(int64_t k) const {
  const size_t i = static_cast<size_t>(k);
  return i == 0 ? cdf_[0] : cdf_[i] - cdf_[i - 1];
}

std::vector<double> PoissonArrivals(size_t n, double rate, uint64_t seed) {
  // A stream of its own, so the request set does not change with the rate.
  Rng rng(seed ^ 0x5ca1ab1e0ddba11ULL);
  std::vector<double> t(n);
  double now = 0;
  for (double& x : t) {
    now += rng.Exponential(rate);
    x = now;
  }
  return t;
}

}  // namespace jisu::loadgen
