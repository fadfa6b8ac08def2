// The wgmma weight-stream GEMM (skinny_gemm.cu) against a double-precision host product of
// the same BF16 operands: odd row counts (partial row tiles), k not a multiple of the 64-element
// chunk, every token tile width, split and unsplit k, with and without accumulation; split
// results reproducible bit for bit. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/gemm_test_util.h"
#include "backend/cuda/kernels.h"

namespace jisu {
namespace {

class CudaSkinnyGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    if (major != 9) GTEST_SKIP() << "the skinny GEMM runs on compute capability 9.x (wgmma)";
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  struct Run {
    std::vector<float> y;
    double rel_err = 0;  // largest |y - reference| / largest |reference|
  };

  // y = x w^T (+ y0) for `sms` SMs' worth of blocks (which sets the k split).
  Run Check(int n, int k, int tokens, bool accumulate, int sms, uint32_t seed) {
    gemm_test::GemmCase c(n, k, tokens, seed);
    EXPECT_TRUE(c.uploaded);
    EXPECT_TRUE(cuda::LaunchSkinnyGemm(c.dw.as<uint16_t>(), n, k, c.dx.as<uint16_t>(), tokens,
                                       c.dy.as<float>(), accumulate, sms, stream_));
    Run run;
    run.y = c.Result(stream_);
    run.rel_err = c.RelErr(run.y, accumulate);
    return run;
  }

  static constexpr int kSms = 132;
  cudaStream_t stream_ = nullptr;
};

TEST_F(CudaSkinnyGemmTest, MatchesTheHostAtOddShapes) {
  uint32_t seed = 1;
  // n: partial row tiles (300 = 4 x 64 + 44), one row; k: 8, a partial last chunk (328, 1000).
  for (int n : {1, 300}) {
    for (int k : {8, 328, 1000}) {
      for (int tokens : {1, 3, 8, 9, 16}) {
        for (bool acc : {false, true}) {
          const Run r = Check(n, k, tokens, acc, kSms, seed++);
          // FP32 accumulation of BF16 products: only the summation order differs from the host.
          EXPECT_LT(r.rel_err, 1e-5)
              << "n " << n << " k " << k << " tokens " << tokens << " accumulate " << acc;
        }
      }
    }
  }
}

TEST_F(CudaSkinnyGemmTest, SplitKIsExactAndReproducible) {
  // 5 row tiles x k = 4104 (33 chunks, the last partial): 8 splits (a cluster's most) at 132
  // SMs, none at 1.
  ASSERT_EQ(cuda::SkinnyGemmSplits(300, 4104, kSms), 8);
  ASSERT_EQ(cuda::SkinnyGemmSplits(300, 4104, 1), 1);
  ASSERT_EQ(cuda::SkinnyGemmSplits(128 * 300, 4096, kSms), 1);  // wide: one block a row tile
  for (bool acc : {false, true}) {
    for (int tokens : {5, 16}) {
      const Run split = Check(300, 4104, tokens, acc, kSms, 7);
      const Run again = Check(300, 4104, tokens, acc, kSms, 7);
      const Run whole = Check(300, 4104, tokens, acc, 1, 7);
      EXPECT_LT(split.rel_err, 1e-5) << tokens;
      EXPECT_LT(whole.rel_err, 1e-5) << tokens;
      EXPECT_EQ(0, std::memcmp(split.y.data(), again.y.data(), split.y.size() * sizeof(float)))
          << "split-k result changed between identical launches, tokens " << tokens;
    }
  }
}

TEST_F(CudaSkinnyGemmTest, RejectsShapesItDoesNotHandle) {
  float* y = nullptr;
  EXPECT_FALSE(cuda::LaunchSkinnyGemm(nullptr, 16, 12, nullptr, 4, y, false, kSms,
                                      stream_));  // k % 8 != 0
  EXPECT_FALSE(cuda::LaunchSkinnyGemm(nullptr, 16, 64, nullptr, cuda::kMaxSkinnyTokens + 1, y,
                                      false, kSms, stream_));
  EXPECT_FALSE(cuda::LaunchSkinnyGemm(nullptr, 16, 64, nullptr, 0, y, false, kSms, stream_));
}

}  // namespace
}  // namespace jisu
