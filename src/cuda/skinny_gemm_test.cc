// The wgmma weight-stream GEMM (skinny_gemm.cu) against a double-precision host product of
// the same BF16 operands: odd row counts (partial row tiles), k not a multiple of the 64-element
// chunk, every token tile width, split and unsplit k, with and without accumulation; split
// results reproducible bit for bit. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels.h"

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
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<uint16_t> w(static_cast<size_t>(n) * k), x(static_cast<size_t>(tokens) * k);
    std::vector<float> y0(static_cast<size_t>(tokens) * n);
    for (auto& v : w) v = F32ToBf16(u(rng));
    for (auto& v : x) v = F32ToBf16(u(rng));
    for (auto& v : y0) v = u(rng);
    DeviceBuffer dw, dx, dy;
    EXPECT_TRUE(dw.Resize(w.size() * 2).ok() && dx.Resize(x.size() * 2).ok() &&
                dy.Resize(y0.size() * 4).ok());
    cudaMemcpy(dw.get(), w.data(), w.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dx.get(), x.data(), x.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dy.get(), y0.data(), y0.size() * 4, cudaMemcpyHostToDevice);
    EXPECT_TRUE(cuda::LaunchSkinnyGemm(dw.as<uint16_t>(), n, k, dx.as<uint16_t>(), tokens,
                                       dy.as<float>(), accumulate, sms, stream_));
    Run run;
    run.y.resize(y0.size());
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    cudaMemcpy(run.y.data(), dy.get(), run.y.size() * 4, cudaMemcpyDeviceToHost);
    double max_ref = 0, max_diff = 0;
    for (int t = 0; t < tokens; ++t) {
      for (int r = 0; r < n; ++r) {
        double ref = accumulate ? y0[static_cast<size_t>(t) * n + r] : 0.0;
        for (int i = 0; i < k; ++i) {
          ref += static_cast<double>(Bf16ToF32(x[static_cast<size_t>(t) * k + i])) *
                 Bf16ToF32(w[static_cast<size_t>(r) * k + i]);
        }
        max_ref = std::max(max_ref, std::fabs(ref));
        max_diff = std::max(max_diff, std::fabs(ref - run.y[static_cast<size_t>(t) * n + r]));
      }
    }
    run.rel_err = max_diff / std::max(max_ref, 1e-9);
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
