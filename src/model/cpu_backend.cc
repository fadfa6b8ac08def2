#include "model/cpu_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "ops/matmul.h"

namespace jisu {
namespace {

bool InterleaveDisabledByEnv() {
  const char* v = std::getenv("JISU_INTERLEAVE");
  return v != nullptr && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0);
}

std::vector<WeightMatrix*> Matrices(ModelWeights& w) {
  std::vector<WeightMatrix*> out{&w.lm_head};
  for (LayerWeights& l : w.layers) {
    for (WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      out.push_back(m);
    }
  }
  return out;
}

}  // namespace

void CpuBackend::AlignedFree::operator()(uint8_t* p) const {
  ::operator delete (p, std::align_val_t{64});
}

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
      weights_(model.weights()),
      transformer_(model.config(), weights_, pool_) {
  if (!options.interleave_weights || InterleaveDisabledByEnv()) return;
  const std::vector<WeightMatrix*> mats = Matrices(weights_);
  uint64_t total = 0;
  for (const WeightMatrix* m : mats) total += (InterleavedBytes(*m) + 63) / 64 * 64;
  if (total == 0) return;
  il_storage_.reset(static_cast<uint8_t*>(::operator new (total, std::align_val_t{64})));
  il_bytes_ = total;
  uint8_t* next = il_storage_.get();
  for (WeightMatrix* m : mats) {
    const size_t n = InterleavedBytes(*m);
    if (n == 0) continue;
    InterleaveWeights(*m, next, pool_);
    m->interleaved = next;
    next += (n + 63) / 64 * 64;
  }
}

Status CpuBackend::Forward(const ForwardBatch& batch, float* logits) {
  return transformer_.Forward(batch, *kv_, logits);
}

std::string CpuBackend::description() const {
  std::string il;
  if (il_bytes_ > 0) il = ", " + std::to_string(il_bytes_ >> 20) + " MiB interleaved";
  return "cpu (" + std::string(MatMulIsaName()) + ", " + std::to_string(pool_.num_threads()) +
         " threads, kv " + KvTypeName(kv_->shape().type) + il + ")";
}

}  // namespace jisu
