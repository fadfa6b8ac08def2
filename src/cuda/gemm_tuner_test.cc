// The tuned cuBLASLt GEMM against a double-precision host product of the same BF16 operands,
// at odd shapes, token counts inside and beyond the tuned range, with and without accumulation;
// and the tuning's bookkeeping (one timing per power-of-two bucket). Skips without a GPU.
#include "cuda/gemm_tuner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_backend.h"

namespace jisu::cuda_detail {
namespace {

uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}
float FromBf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

class CudaGemmTunerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
    ASSERT_TRUE(workspace_.Resize(32 << 20).ok());
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  // y = x w^T (+ y0) on the tuner and on the host; returns the largest difference relative to
  // the largest |reference|.
  double Check(GemmTuner& tuner, int n, int k, int tokens, bool accumulate, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<uint16_t> w(static_cast<size_t>(n) * k), x(static_cast<size_t>(tokens) * k);
    std::vector<float> y0(static_cast<size_t>(tokens) * n);
    for (auto& v : w) v = ToBf16(u(rng));
    for (auto& v : x) v = ToBf16(u(rng));
    for (auto& v : y0) v = u(rng);
    DeviceBuffer dw, dx, dy;
    EXPECT_TRUE(dw.Resize(w.size() * 2).ok() && dx.Resize(x.size() * 2).ok() &&
                dy.Resize(y0.size() * 4).ok());
    cudaMemcpy(dw.get(), w.data(), w.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dx.get(), x.data(), x.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dy.get(), y0.data(), y0.size() * 4, cudaMemcpyHostToDevice);
    const Status st =
        tuner.Run(dw.get(), n, k, dx.get(), tokens, dy.as<float>(), accumulate, stream_);
    EXPECT_TRUE(st.ok()) << st.ToString();
    std::vector<float> y(y0.size());
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    cudaMemcpy(y.data(), dy.get(), y.size() * 4, cudaMemcpyDeviceToHost);
    double max_ref = 0, max_diff = 0;
    for (int t = 0; t < tokens; ++t) {
      for (int r = 0; r < n; ++r) {
        double ref = accumulate ? y0[static_cast<size_t>(t) * n + r] : 0.0;
        for (int i = 0; i < k; ++i) {
          ref += static_cast<double>(FromBf16(x[static_cast<size_t>(t) * k + i])) *
                 FromBf16(w[static_cast<size_t>(r) * k + i]);
        }
        max_ref = std::max(max_ref, std::fabs(ref));
        max_diff = std::max(max_diff, std::fabs(ref - y[static_cast<size_t>(t) * n + r]));
      }
    }
    return max_diff / std::max(max_ref, 1e-9);
  }

  cudaStream_t stream_ = nullptr;
  DeviceBuffer workspace_;
};

TEST_F(CudaGemmTunerTest, TunedProductsMatchTheHost) {
  for (bool tune : {true, false}) {
    GemmTuner tuner;
    ASSERT_TRUE(tuner.Init(workspace_.get(), workspace_.size(), tune).ok());
    uint32_t seed = 1;
    for (int tokens : {3, 17, 64, 600}) {
      for (bool acc : {false, true}) {
        // FP32 accumulation of BF16 products: only summation order differs from the host.
        EXPECT_LT(Check(tuner, 200, 328, tokens, acc, seed++), 1e-4)
            << "tune " << tune << " tokens " << tokens << " accumulate " << acc;
      }
    }
    // Tuned: one timing per (shape, accumulate, bucket <= 512); 600 tokens stay untuned.
    EXPECT_EQ(tuner.timed(), tune ? 6 : 0);
  }
}

TEST_F(CudaGemmTunerTest, TokenCountsOfOneBucketShareOneTiming) {
  GemmTuner tuner;
  ASSERT_TRUE(tuner.Init(workspace_.get(), workspace_.size(), true).ok());
  for (int tokens : {33, 40, 63, 64}) EXPECT_LT(Check(tuner, 96, 256, tokens, false, tokens), 1e-4);
  EXPECT_EQ(tuner.timed(), 1);
  EXPECT_LT(Check(tuner, 96, 256, 65, false, 7), 1e-4);
  EXPECT_EQ(tuner.timed(), 2);
}

}  // namespace
}  // namespace jisu::cuda_detail
