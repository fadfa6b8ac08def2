// The fixture of the CUDA backend's GPU tests (cuda_backend_test.cc: logits against the CPU;
// cuda_gpu_engine_test.cc: device sampling and the engine on the GPU). Skips where no GPU is
// present (CI).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels.h"
#include "model/model.h"
#include "tests/test_util.h"

namespace jisu {

// |gpu - cpu| / max|cpu| over a row of logits.
inline double RelDiff(const float* got, const float* want, int64_t n) {
  double max_ref = 0, max_diff = 0;
  for (int64_t i = 0; i < n; ++i) {
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(want[i])));
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(got[i]) - want[i]));
  }
  return max_diff / std::max(max_ref, 1e-6);
}

inline int32_t ArgMax(const float* x, int64_t n) {
  return static_cast<int32_t>(std::max_element(x, x + n) - x);
}

class CudaBackendTest : public ::testing::Test {
 public:
  void SetUp() override {
    std::string why;
    if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  }

  static std::unique_ptr<Model> Load(const char* name) {
    auto m = Model::Load((testing::SourceDir() / "models" / name).string());
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(m).value() : nullptr;
  }

  static std::unique_ptr<ForwardBackend> Gpu(
      const Model& model, int64_t blocks, int64_t chunk_tokens = 0, int64_t block_size = 16,
      bool fast_paths = true, bool gemv = false,
      const std::function<void(CudaBackendOptions&)>& tweak = nullptr) {
    CudaBackendOptions o;
    o.cuda_graphs = fast_paths;
    o.flash_attention = fast_paths;
    o.gemv_max_tokens = gemv ? 8 : 0;
    o.skinny_max_tokens = fast_paths ? cuda::kMaxSkinnyTokens : 0;
    if (tweak) tweak(o);
    o.block_size = block_size;
    o.kv_bytes = 1ull << 30;
    o.max_kv_blocks = blocks;
    o.attention_chunk_tokens = chunk_tokens;
    auto b = CreateCudaBackend(model, o);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? std::move(b).value() : nullptr;
  }

  static std::unique_ptr<ForwardBackend> Cpu(const Model& model, int64_t blocks,
                                             int64_t block_size = 16) {
    // F32 KV: the tolerances below were set against the float CPU cache.
    auto b = CpuBackend::Create(model, CpuBackendOptions{blocks, block_size, 2, KvType::kF32});
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? std::unique_ptr<ForwardBackend>(std::move(b).value()) : nullptr;
  }
};

}  // namespace jisu
