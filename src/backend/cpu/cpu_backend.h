// The CPU implementation of ForwardBackend: the Transformer over a KvCache (F16 or F32) in host
// memory, with its own thread pool.
#pragma once

#include <memory>

#include "backend/cpu/cpu_weights.h"
#include "backend/cpu/transformer.h"
#include "backend/forward_backend.h"
#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace jisu {

struct CpuBackendOptions {
  int64_t kv_blocks = 0;    // > 0
  int64_t block_size = 16;  // token slots per block
  int num_threads = 0;      // 0 = all cores
  KvType kv_type = kDefaultKvType;
  CpuWeightsOptions weights = {};  // load-time repacking, for the engine's default matmul path
};

class CpuBackend final : public ForwardBackend {
 public:
  // `model` must outlive the backend.
  static Result<std::unique_ptr<CpuBackend>> Create(const Model& model,
                                                    const CpuBackendOptions& options);

  const ModelConfig& config() const override { return transformer_.config(); }
  int64_t num_kv_blocks() const override { return kv_->shape().num_blocks; }
  int64_t kv_block_size() const override { return kv_->shape().block_size; }
  uint64_t kv_bytes_per_block() const override { return kv_->shape().BytesPerBlock(); }
  Status Forward(const ForwardBatch& batch, float* logits) override;
  std::string description() const override;
  ThreadPool* host_pool() override { return &pool_; }
  bool HasMatmulPaths() const override { return true; }

  // Bytes of K and V (all layers) one block of `block_size` slots of `kv_type` takes.
  static uint64_t BytesPerBlock(const ModelConfig& config, int64_t block_size, KvType kv_type);

 private:
  CpuBackend(const Model& model, const CpuBackendOptions& options, std::unique_ptr<KvCache> kv);

  ThreadPool pool_;
  std::unique_ptr<KvCache> kv_;
  CpuWeights weights_;
  Transformer transformer_;
};

}  // namespace jisu
