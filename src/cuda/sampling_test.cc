// The device sampler reads a split row's share either from shared memory (copied once, when it
// fits) or from global memory on every pass; both must draw the same tokens, since only the
// place the logits are read from differs. Rows with different filters share one grid (a filter
// one row uses runs, as a no-op, in the others). Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels.h"

namespace jisu {
namespace {

TEST(CudaSamplingTest, CachedAndGlobalRowReadsDrawTheSameTokens) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  constexpr int kVocab = 40000;  // split over 16 blocks of 2500 tokens: cached by default
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 2.5f);
  std::vector<cuda::DeviceSampling> params(4);
  params[0].temperature = 0.8f;
  params[0].top_p = 0.9f;
  params[1].temperature = 1.2f;
  params[1].top_k = 50;
  params[2].temperature = 0.0f;  // greedy
  params[3].temperature = 1.0f;
  params[3].min_p = 0.05f;
  const int rows = static_cast<int>(params.size());
  std::vector<float> logits(static_cast<size_t>(rows) * kVocab);
  for (float& v : logits) v = normal(rng);
  for (int r = 0; r < rows; ++r) params[r].row = r;

  DeviceBuffer d_logits, d_params, d_out, scratch;
  ASSERT_TRUE(d_logits.Resize(logits.size() * 4).ok());
  ASSERT_TRUE(d_params.Resize(params.size() * sizeof(cuda::DeviceSampling)).ok());
  ASSERT_TRUE(d_out.Resize(rows * 4).ok());
  ASSERT_TRUE(scratch.Resize(cuda::SampleScratchBytes()).ok());
  ASSERT_EQ(cudaMemcpy(d_logits.get(), logits.data(), logits.size() * 4, cudaMemcpyHostToDevice),
            cudaSuccess);
  auto draw = [&](int max_cached) {
    std::vector<int32_t> ids(rows, -1);
    EXPECT_EQ(cudaMemcpy(d_params.get(), params.data(), params.size() * sizeof(params[0]),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    cuda::LaunchSampleRows(d_logits.as<float>(), kVocab, d_params.as<cuda::DeviceSampling>(),
                           params.data(), rows, d_out.as<int32_t>(), scratch.get(), nullptr,
                           max_cached);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ids.data(), d_out.get(), rows * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    return ids;
  };
  const int argmax =
      static_cast<int>(std::max_element(logits.begin() + 2 * kVocab, logits.begin() + 3 * kVocab) -
                       (logits.begin() + 2 * kVocab));
  // Row 1 keeps its 50 largest logits only.
  std::vector<float> row1(logits.begin() + kVocab, logits.begin() + 2 * kVocab);
  std::nth_element(row1.begin(), row1.begin() + 49, row1.end(), std::greater<float>());
  const float kth = row1[49];
  for (int i = 0; i < 25; ++i) {
    for (auto& p : params) p.u = (i + 0.5) / 25;
    const std::vector<int32_t> cached = draw(-1);
    const std::vector<int32_t> global = draw(0);
    EXPECT_EQ(cached, global) << "u " << params[0].u;
    EXPECT_EQ(cached[2], argmax);
    ASSERT_GE(cached[1], 0);
    ASSERT_LT(cached[1], kVocab);
    EXPECT_GE(logits[kVocab + cached[1]], kth) << "row 1 drew a token outside its top 50";
  }
}

}  // namespace
}  // namespace jisu
