#include "kv/kv_cache.h"

#include <limits>
#include <new>

namespace jisu {

uint64_t KvCacheShape::BytesPerBlock() const {
  return 2ull * static_cast<uint64_t>(num_layers) * static_cast<uint64_t>(FloatsPerBlock()) *
         sizeof(float);
}

Status KvCacheShape::Validate() const {
  if (num_layers <= 0 || num_kv_heads <= 0 || head_dim <= 0 || block_size <= 0 || num_blocks <= 0) {
    return Status::InvalidArgument("KV cache: all dimensions must be positive");
  }
  if (block_size > 4096) return Status::InvalidArgument("KV cache: block size above 4096");
  // 2^40 floats per tensor is far above any memory; checks keep the products below overflow.
  const double floats = static_cast<double>(num_layers) * num_blocks * num_kv_heads * block_size *
                        static_cast<double>(head_dim);
  if (floats > static_cast<double>(1ull << 40)) {
    return Status::ResourceExhausted("KV cache: requested size is too large");
  }
  return Status::Ok();
}

Result<std::unique_ptr<KvCache>> KvCache::Create(const KvCacheShape& shape) {
  JISU_RETURN_IF_ERROR(shape.Validate());
  std::unique_ptr<KvCache> cache(new KvCache(shape));
  const size_t n = static_cast<size_t>(shape.num_layers * shape.num_blocks) *
                   static_cast<size_t>(shape.FloatsPerBlock());
  try {
    cache->keys_.assign(n, 0.0f);
    cache->values_.assign(n, 0.0f);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("KV cache: cannot allocate " +
                                     std::to_string(2 * n * sizeof(float)) + " bytes");
  }
  return cache;
}

}  // namespace jisu
