// Test support for the GPU matrix products (skinny_gemm_test.cc, gemm_tuner_test.cc): random
// BF16 operands uploaded to the device, and the double-precision host product y = x w^T (+ y0)
// that every kernel's result is compared with.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "backend/cuda/device_buffer.h"
#include "core/half.h"

namespace jisu::gemm_test {

// w [n, k] and x [tokens, k] in BF16, y0 [tokens, n] in FP32, uniform in [-1, 1), on the host
// and on the device (dy holds y0, the accumulation input).
struct GemmCase {
  int n = 0, k = 0, tokens = 0;
  std::vector<uint16_t> w, x;
  std::vector<float> y0;
  DeviceBuffer dw, dx, dy;
  bool uploaded = false;

  GemmCase(int n_, int k_, int tokens_, uint32_t seed) : n(n_), k(k_), tokens(tokens_) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    w.resize(static_cast<size_t>(n) * k);
    x.resize(static_cast<size_t>(tokens) * k);
    y0.resize(static_cast<size_t>(tokens) * n);
    for (auto& v : w) v = F32ToBf16(u(rng));
    for (auto& v : x) v = F32ToBf16(u(rng));
    for (auto& v : y0) v = u(rng);
    uploaded =
        dw.Resize(w.size() * 2).ok() && dx.Resize(x.size() * 2).ok() &&
        dy.Resize(y0.size() * 4).ok() &&
        cudaMemcpy(dw.get(), w.data(), w.size() * 2, cudaMemcpyHostToDevice) == cudaSuccess &&
        cudaMemcpy(dx.get(), x.data(), x.size() * 2, cudaMemcpyHostToDevice) == cudaSuccess &&
        cudaMemcpy(dy.get(), y0.data(), y0.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess;
  }

  // The device result after the stream's work; empty if the stream or the copy failed.
  std::vector<float> Result(cudaStream_t stream) const {
    std::vector<float> y(y0.size());
    if (cudaStreamSynchronize(stream) != cudaSuccess ||
        cudaMemcpy(y.data(), dy.get(), y.size() * 4, cudaMemcpyDeviceToHost) != cudaSuccess) {
      return {};
    }
    return y;
  }

  // Largest |y - reference| over the largest |reference| (infinite if y has the wrong size).
  double RelErr(const std::vector<float>& y, bool accumulate) const {
    if (y.size() != y0.size()) return INFINITY;
    double max_ref = 0, max_diff = 0;
    for (int t = 0; t < tokens; ++t) {
      for (int r = 0; r < n; ++r) {
        double ref = accumulate ? y0[static_cast<size_t>(t) * n + r] : 0.0;
        for (int i = 0; i < k; ++i) {
          ref += static_cast<double>(Bf16ToF32(x[static_cast<size_t>(t) * k + i])) *
                 Bf16ToF32(w[static_cast<size_t>(r) * k + i]);
        }
        max_ref = std::max(max_ref, std::fabs(ref));
        max_diff = std::max(max_diff, std::fabs(ref - y[static_cast<size_t>(t) * n + r]));
      }
    }
    return max_diff / std::max(max_ref, 1e-9);
  }
};

}  // namespace jisu::gemm_test
