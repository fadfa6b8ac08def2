#include "backend/cpu/cpu_backend.h"

#include "ops/matmul.h"

namespace jisu {

uint64_t CpuBackend::BytesPerBlock(const ModelConfig& config, int64_t block_size, KvType kv_type) {
  KvCacheShape shape{
      config.num_layers, config.num_kv_heads, config.head_dim, block_size, 1, kv_type};
  return shape.BytesPerBlock();
}

Result<std::unique_ptr<CpuBackend>> CpuBackend::Create(const Model& model,
                                                       const CpuBackendOptions& options) {
  if (!model.has_weights()) return Status::InvalidArgument("cpu backend: the model has no weights");
  if (options.num_threads < 0) {
    return Status::InvalidArgument("cpu backend: num_threads must be >= 0");
  }
  const ModelConfig& c = model.config();
  KvCacheShape shape{c.num_layers,       c.num_kv_heads,    c.head_dim,
                     options.block_size, options.kv_blocks, options.kv_type};
  JISU_ASSIGN_OR_RETURN(auto kv, KvCache::Create(shape));
  return std::unique_ptr<CpuBackend>(new CpuBackend(model, options, std::move(kv)));
}

CpuBackend::CpuBackend(const Model& model, const CpuBackendOptions& options,
                       std::unique_ptr<KvCache> kv)
    : pool_(options.num_threads),
      kv_(std::move(kv)),
      weights_(model.weights(), pool_, options.weights),
      transformer_(model.config(), weights_.weights(), pool_) {}

Status CpuBackend::Forward(const ForwardBatch& batch, float* logits) {
  return transformer_.Forward(batch, *kv_, logits);
}

std::string CpuBackend::description() const {
  std::string repacked;
  if (weights_.repacked_bytes() > 0) {
    repacked = ", " + std::to_string(weights_.repacked_bytes() >> 20) + " MiB repacked";
  }
  return "cpu (" + std::string(MatMulIsaName()) + ", " + std::to_string(pool_.num_threads()) +
         " threads, kv " + KvTypeName(kv_->shape().type) + repacked + ")";
}

}  // namespace jisu
