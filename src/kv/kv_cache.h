// KV cache storage in fixed-size blocks: the memory that the paged block pool (serving engine)
// hands out. A sequence's keys and values live in the blocks of its block table, in position
// order: position p is slot p % block_size of block block_table[p / block_size].
// Layout of one block of one layer: [num_kv_heads][block_size][head_dim] float32, so the keys
// of one head within a block are contiguous for the attention loop.
// This class owns memory only; who owns which block is the block pool's business.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "jisu/status.h"

namespace jisu {

struct KvCacheShape {
  int64_t num_layers = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_size = 16;  // token slots per block
  int64_t num_blocks = 0;

  int64_t FloatsPerBlock() const { return num_kv_heads * block_size * head_dim; }
  // Bytes of K and V over all layers for one block.
  uint64_t BytesPerBlock() const;
  Status Validate() const;
};

class KvCache {
 public:
  static Result<std::unique_ptr<KvCache>> Create(const KvCacheShape& shape);

  const KvCacheShape& shape() const { return shape_; }
  float* Keys(int64_t layer, int32_t block) { return Block(keys_, layer, block); }
  float* Values(int64_t layer, int32_t block) { return Block(values_, layer, block); }
  const float* Keys(int64_t layer, int32_t block) const { return Block(keys_, layer, block); }
  const float* Values(int64_t layer, int32_t block) const { return Block(values_, layer, block); }
  uint64_t TotalBytes() const { return 2 * keys_.size() * sizeof(float); }

 private:
  explicit KvCache(const KvCacheShape& shape) : shape_(shape) {}
  float* Block(std::vector<float>& v, int64_t layer, int32_t block) {
    return v.data() + (layer * shape_.num_blocks + block) * shape_.FloatsPerBlock();
  }
  const float* Block(const std::vector<float>& v, int64_t layer, int32_t block) const {
    return v.data() + (layer * shape_.num_blocks + block) * shape_.FloatsPerBlock();
  }

  KvCacheShape shape_;
  std::vector<float> keys_;    // [num_layers][num_blocks][FloatsPerBlock]
  std::vector<float> values_;  // same
};

// Number of blocks needed for `num_tokens` positions.
inline int64_t BlocksForTokens(int64_t num_tokens, int64_t block_size) {
  return (num_tokens + block_size - 1) / block_size;
}

}  // namespace jisu
