// The device sampler has two implementations of the same filters (backend/cuda/sampling.cu): the
// fast path for few rows and the reference path. The reference path reads a split row's share
// either from shared memory (copied once, when it fits) or from global memory on every pass; both
// must draw the same tokens. The fast path must draw what the reference path draws, row by row,
// whatever the filters, rows and edge values (NaN, infinities, ties). Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/kernels.h"

namespace jisu {
namespace {

cuda::DeviceSampling Row(float temperature, int top_k, float top_p, float min_p) {
  cuda::DeviceSampling p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  return p;
}

// Logits, parameters and scratch on the device; Draw() launches one path and returns the ids.
class Sampler {
 public:
  Sampler(const std::vector<float>& logits, int vocab, int max_rows) : vocab_(vocab) {
    EXPECT_TRUE(logits_.Resize(logits.size() * 4).ok());
    EXPECT_TRUE(params_.Resize(max_rows * sizeof(cuda::DeviceSampling)).ok());
    EXPECT_TRUE(out_.Resize(max_rows * 4).ok());
    EXPECT_TRUE(scratch_.Resize(cuda::SampleScratchBytes()).ok());
    EXPECT_EQ(cudaMemcpy(logits_.get(), logits.data(), logits.size() * 4, cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  std::vector<int32_t> Draw(const std::vector<cuda::DeviceSampling>& params, cuda::SamplePath path,
                            int max_cached = -1, cuda::SamplePath* taken = nullptr) {
    const int rows = static_cast<int>(params.size());
    std::vector<int32_t> ids(rows, -1);
    EXPECT_EQ(
        cudaMemcpy(params_.get(), params.data(), rows * sizeof(params[0]), cudaMemcpyHostToDevice),
        cudaSuccess);
    EXPECT_EQ(cudaMemset(out_.get(), 0xff, rows * 4), cudaSuccess);
    const cuda::SamplePath p = cuda::LaunchSampleRows(
        logits_.as<float>(), vocab_, params_.as<cuda::DeviceSampling>(), params.data(), rows,
        out_.as<int32_t>(), scratch_.get(), nullptr, max_cached, path);
    if (taken) *taken = p;
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ids.data(), out_.get(), rows * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    return ids;
  }
  // Microseconds per launch, `n` launches back to back.
  double Time(const std::vector<cuda::DeviceSampling>& params, cuda::SamplePath path, int n) {
    const int rows = static_cast<int>(params.size());
    EXPECT_EQ(
        cudaMemcpy(params_.get(), params.data(), rows * sizeof(params[0]), cudaMemcpyHostToDevice),
        cudaSuccess);
    auto launch = [&] {
      cuda::LaunchSampleRows(logits_.as<float>(), vocab_, params_.as<cuda::DeviceSampling>(),
                             params.data(), rows, out_.as<int32_t>(), scratch_.get(), nullptr, -1,
                             path);
    };
    for (int i = 0; i < 10; ++i) launch();
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a);
    for (int i = 0; i < n; ++i) launch();
    cudaEventRecord(b);
    EXPECT_EQ(cudaEventSynchronize(b), cudaSuccess);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return 1000.0 * ms / n;
  }

 private:
  int vocab_;
  DeviceBuffer logits_, params_, out_, scratch_;
};

std::vector<float> NormalLogits(int rows, int vocab, float sigma, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> logits(static_cast<size_t>(rows) * vocab);
  for (float& v : logits) v = normal(rng);
  return logits;
}

TEST(CudaSamplingTest, CachedAndGlobalRowReadsDrawTheSameTokens) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  constexpr int kVocab = 40000;  // split over 16 blocks of 2500 tokens: cached by default
  std::vector<cuda::DeviceSampling> params = {Row(0.8f, 0, 0.9f, 0), Row(1.2f, 50, 1, 0),
                                              Row(0, 0, 1, 0), Row(1, 0, 1, 0.05f)};
  const int rows = static_cast<int>(params.size());
  const std::vector<float> logits = NormalLogits(rows, kVocab, 2.5f, 7);
  for (int r = 0; r < rows; ++r) params[r].row = r;
  Sampler sampler(logits, kVocab, rows);
  const int argmax =
      static_cast<int>(std::max_element(logits.begin() + 2 * kVocab, logits.begin() + 3 * kVocab) -
                       (logits.begin() + 2 * kVocab));
  // Row 1 keeps its 50 largest logits only.
  std::vector<float> row1(logits.begin() + kVocab, logits.begin() + 2 * kVocab);
  std::nth_element(row1.begin(), row1.begin() + 49, row1.end(), std::greater<float>());
  const float kth = row1[49];
  for (int i = 0; i < 25; ++i) {
    for (auto& p : params) p.u = (i + 0.5) / 25;
    const std::vector<int32_t> cached = sampler.Draw(params, cuda::SamplePath::kReference, -1);
    const std::vector<int32_t> global = sampler.Draw(params, cuda::SamplePath::kReference, 0);
    const std::vector<int32_t> fast = sampler.Draw(params, cuda::SamplePath::kAuto);
    EXPECT_EQ(cached, global) << "u " << params[0].u;
    EXPECT_EQ(fast, cached) << "u " << params[0].u;
    EXPECT_EQ(cached[2], argmax);
    ASSERT_GE(cached[1], 0);
    ASSERT_LT(cached[1], kVocab);
    EXPECT_GE(logits[kVocab + cached[1]], kth) << "row 1 drew a token outside its top 50";
  }
}

// Every filter combination, 1 to 8 rows of a Llama-3 vocabulary (and of a small one): the fast
// path takes the launch and draws, for each of `draws` values of u, the token the reference path
// draws.
void FastPathDrawsWhatTheReferenceDrawsFor(int draws) {
  const std::vector<cuda::DeviceSampling> configs = {
      Row(0, 0, 1, 0),           Row(1, 0, 1, 0),
      Row(0.8f, 0, 1, 0),        Row(0.8f, 0, 0.95f, 0),
      Row(0.7f, 0, 0.5f, 0),     Row(1.2f, 7, 1, 0),
      Row(1, 0, 1, 0.05f),       Row(0.9f, 20, 0.9f, 0.02f),
      Row(1.5f, 3000, 0.95f, 0), Row(0.6f, 1, 0.9f, 0),
      Row(1, 0, 0.99f, 0.5f),    Row(2.0f, 100000, 0.999f, 0.001f)};
  for (const int vocab : {128256, 8192}) {
    for (const int rows : {1, 2, 8}) {
      const std::vector<float> logits = NormalLogits(rows, vocab, 3.0f, 11 + rows);
      Sampler sampler(logits, vocab, rows);
      for (size_t c = 0; c < configs.size(); ++c) {
        std::vector<cuda::DeviceSampling> params(rows);
        for (int r = 0; r < rows; ++r) {
          params[r] = configs[(c + r) % configs.size()];  // mixed filters in one launch
          params[r].row = rows - 1 - r;
        }
        int mismatches = 0;
        for (int i = 0; i < draws; ++i) {
          for (auto& p : params) p.u = (i + 0.5) / draws;
          cuda::SamplePath taken = cuda::SamplePath::kAuto;
          const std::vector<int32_t> ref = sampler.Draw(params, cuda::SamplePath::kReference);
          const std::vector<int32_t> fast =
              sampler.Draw(params, cuda::SamplePath::kAuto, -1, &taken);
          ASSERT_EQ(taken, cuda::SamplePath::kFast) << "vocab " << vocab << " rows " << rows;
          for (int r = 0; r < rows; ++r) {
            if (fast[r] != ref[r] && ++mismatches <= 3) {
              ADD_FAILURE() << "vocab " << vocab << " rows " << rows << " config " << c << " row "
                            << r << " u " << params[r].u << ": fast " << fast[r] << ", reference "
                            << ref[r];
            }
          }
        }
      }
    }
  }
}

TEST(CudaSamplingTest, FastPathDrawsWhatTheReferenceDraws) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  FastPathDrawsWhatTheReferenceDrawsFor(12);
}

// Each launch shape of the test above once: the run compute-sanitizer's racecheck can finish
// (the full test does not in 430 s under it; bench/device/racecheck_tests.sh).
TEST(CudaSamplingTest, FastPathLaunchShapesOnceDrawWhatTheReferenceDraws) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  FastPathDrawsWhatTheReferenceDrawsFor(1);
}

// NaN logits never win, +inf wins (greedy), a row of -inf draws id 0, equal logits are all kept
// and drawn in id order, min-p can leave less than the top-p mass (no cut), top-k beyond the
// finite tokens keeps them all; `draws` values of u each.
void FastPathEdgeValuesMatchTheReferenceFor(int draws) {
  constexpr int kVocab = 128256;
  constexpr int kRows = 6;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> logits = NormalLogits(kRows, kVocab, 2.0f, 3);
  float* row = logits.data();
  for (int i = 0; i < kVocab; i += 3) row[i] = std::nanf("");  // row 0: a third NaN
  row += kVocab;
  row[77777] = inf;  // row 1: +inf
  row[99999] = inf;
  row += kVocab;
  std::fill(row, row + kVocab, -inf);  // row 2: all -inf
  row += kVocab;
  std::fill(row, row + kVocab, 1.5f);  // row 3: all equal
  row += kVocab;
  for (int i = 0; i < kVocab; ++i) {  // row 4: 129 finite tokens, five values
    row[i] = i % 1000 == 0 ? static_cast<float>(i / 1000 % 5) : -inf;
  }
  row += kVocab;
  for (int i = 0; i < kVocab; ++i) row[i] = static_cast<float>(i % 17);  // row 5: many ties
  Sampler sampler(logits, kVocab, kRows);
  const std::vector<cuda::DeviceSampling> configs = {
      Row(0.8f, 0, 0.95f, 0), Row(1, 0, 1, 0),        Row(0.9f, 20, 0.9f, 0.02f),
      Row(1, 0, 0.99f, 0.5f), Row(1.3f, 500, 1, 0),   Row(0.5f, 0, 0.3f, 0),
      Row(0, 0, 1, 0),        Row(1.1f, 200, 0.7f, 0)};
  for (int rows : {1, kRows}) {
    for (size_t c = 0; c < configs.size(); ++c) {
      for (int shift = 0; shift < (rows == 1 ? kRows : 2); ++shift) {
        std::vector<cuda::DeviceSampling> params(rows, configs[c]);
        for (int r = 0; r < rows; ++r) params[r].row = (r + shift) % kRows;
        for (int i = 0; i < draws; ++i) {
          for (auto& p : params) p.u = (i + 0.25) / draws;
          cuda::SamplePath taken = cuda::SamplePath::kAuto;
          const std::vector<int32_t> ref = sampler.Draw(params, cuda::SamplePath::kReference);
          const std::vector<int32_t> fast =
              sampler.Draw(params, cuda::SamplePath::kAuto, -1, &taken);
          ASSERT_EQ(taken, cuda::SamplePath::kFast);
          EXPECT_EQ(fast, ref) << "config " << c << " rows " << rows << " first row "
                               << params[0].row << " u " << params[0].u;
          for (int r = 0; r < rows; ++r) {
            const int lr = params[r].row;
            ASSERT_GE(fast[r], 0);
            ASSERT_LT(fast[r], kVocab);
            const float drawn = logits[static_cast<size_t>(lr) * kVocab + fast[r]];
            EXPECT_FALSE(std::isnan(drawn)) << "row " << lr;
            EXPECT_EQ(fast[r], lr == 1 ? 77777 : lr == 2 ? 0 : fast[r]) << "row " << lr;
            EXPECT_EQ(lr == 4 ? fast[r] % 1000 : 0, 0) << "row " << lr;
          }
        }
      }
    }
  }
}

TEST(CudaSamplingTest, FastPathEdgeValuesMatchTheReference) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  FastPathEdgeValuesMatchTheReferenceFor(8);
}

// Each launch of the test above once, for racecheck (as above).
TEST(CudaSamplingTest, FastPathEdgeValuesOnceMatchTheReference) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  FastPathEdgeValuesMatchTheReferenceFor(1);
}

// Timing of both paths (not a check): run with --gtest_also_run_disabled_tests.
TEST(CudaSamplingTest, DISABLED_Timing) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  constexpr int kVocab = 128256;
  constexpr int kMaxRows = 64;
  struct Config {
    const char* name;
    cuda::DeviceSampling p;
  };
  const std::vector<Config> configs = {{"greedy", Row(0, 0, 1, 0)},
                                       {"T0.8", Row(0.8f, 0, 1, 0)},
                                       {"T0.8 top-p 0.95 (bench-gpu)", Row(0.8f, 0, 0.95f, 0)},
                                       {"T0.7 k50 p0.9 min-p0.05", Row(0.7f, 50, 0.9f, 0.05f)}};
  for (const float sigma : {3.0f, 1.0f}) {
    const std::vector<float> logits = NormalLogits(kMaxRows, kVocab, sigma, 5);
    Sampler sampler(logits, kVocab, kMaxRows);
    for (const Config& c : configs) {
      for (const int rows : {1, 2, 8, 64}) {
        std::vector<cuda::DeviceSampling> params(rows, c.p);
        for (int r = 0; r < rows; ++r) {
          params[r].row = r;
          params[r].u = (r + 0.5) / rows;
        }
        const double ref = sampler.Time(params, cuda::SamplePath::kReference, 200);
        const double fast = sampler.Time(params, cuda::SamplePath::kAuto, 200);
        std::printf("sampler logits N(0,%.0f) %-28s rows %2d: reference %7.1f us, auto %7.1f us\n",
                    sigma, c.name, rows, ref, fast);
      }
    }
  }
}

}  // namespace
}  // namespace jisu
