// The backend's cuBLAS GEMMs, y[T, n] (f32) = x[T, k] (bf16) . w[n, k]^T (bf16) (+ y), on
// cuBLASLt with the algorithm measured fastest for each shape instead of the library's first
// heuristic pick. At decode batch sizes that pick leaves SMs idle on the narrow projections
// (Llama-3.1-8B shape on an H200, batch 64: QKV in 96 CTAs at 2.8 TB/s, o at 2.6 TB/s), where
// other algorithms (split-K, smaller tiles) stream the weights faster.
//
// Token counts up to kMaxTunedTokens are tuned per power-of-two bucket (at most ten tunings per
// weight shape, however the batches vary): outside a CUDA graph capture the top heuristic
// candidates for the bucket's size are timed (the real weights, scratch activations and output,
// L2 flushed before every timed run so the weights come from HBM as in a step) and the fastest
// (when >= 3% faster than the heuristic's first pick) is used for every token count of the
// bucket that it supports. During a capture (no timing
// possible) and above kMaxTunedTokens (prefill: compute-bound, the heuristic is good) the first
// heuristic pick is used.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "backend/cuda/device_buffer.h"
#include "jisu/status.h"

namespace jisu::cuda_detail {

class GemmTuner {
 public:
  GemmTuner() = default;
  GemmTuner(const GemmTuner&) = delete;
  GemmTuner& operator=(const GemmTuner&) = delete;
  ~GemmTuner();

  // `workspace` stays owned by the caller and must outlive the tuner (captured graphs use it).
  Status Init(void* workspace, size_t workspace_bytes, bool tune);
  Status Run(const void* w, int n, int k, const void* x, int tokens, float* y, bool accumulate,
             cudaStream_t stream);
  static constexpr int kMaxTunedTokens = 512;
  // Buckets timed so far (for reports and tests).
  int timed() const { return static_cast<int>(tuned_.size()); }

 private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool final = false;  // false: a capture-time heuristic pick, tuned on the next eager call
  };
  using Key = std::tuple<int, int, int, bool>;  // n, k, tokens, accumulate

  Status MakePlan(const Key& key, Plan& plan);
  Status Choose(const Key& key, Plan& plan, const void* w, cudaStream_t stream);
  // The fastest algorithm for `bucket` tokens (timed once per bucket), in `algo`.
  Status TimeBucket(const Key& bucket, const void* w, cudaStream_t stream,
                    cublasLtMatmulAlgo_t& algo);
  static void Destroy(Plan& plan);

  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  bool tune_ = true;
  std::map<Key, Plan> plans_;
  std::map<Key, cublasLtMatmulAlgo_t> tuned_;  // per (n, k, bucket tokens, accumulate)
  DeviceBuffer scratch_x_;                     // tuning input (zeros)
  DeviceBuffer scratch_;                       // tuning output
  DeviceBuffer flush_;  // written before each timed run: evicts the weights from L2
};

}  // namespace jisu::cuda_detail
