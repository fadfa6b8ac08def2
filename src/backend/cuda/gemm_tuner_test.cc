// The tuned cuBLASLt GEMM against a double-precision host product of the same BF16 operands,
// at odd shapes, token counts inside and beyond the tuned range, with and without accumulation;
// and the tuning's bookkeeping (one timing per power-of-two bucket). Skips without a GPU.
#include "backend/cuda/gemm_tuner.h"

#include <gtest/gtest.h>

#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/gemm_test_util.h"

namespace jisu::cuda_detail {
namespace {

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
    gemm_test::GemmCase c(n, k, tokens, seed);
    EXPECT_TRUE(c.uploaded);
    const Status st =
        tuner.Run(c.dw.get(), n, k, c.dx.get(), tokens, c.dy.as<float>(), accumulate, stream_);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return c.RelErr(c.Result(stream_), accumulate);
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
