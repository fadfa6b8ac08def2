// KV cache storage in fixed-size blocks: the memory that the paged block pool (serving engine)
// hands out. A sequence's keys and values live in the blocks of its block table, in position
// order: position p is slot p % block_size of block block_table[p / block_size].
// Layout of one block of one layer: [num_kv_heads][block_size][head_dim] elements of the
// cache's KvType (F16 by default, or F32), so the keys of one head within a block are
// contiguous for the attention loop.
// This class owns memory and its layout only (writers go through Store, readers through
// Head); who owns which block is the block pool's business.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/huge_pages.h"
#include "jisu/status.h"
#include "ops/attention.h"

namespace jisu {

// F16 as llama.cpp does: half the bytes per token, which is both the decode attention's memory
// traffic and how many sequences a --kv-memory budget holds.
inline constexpr KvType kDefaultKvType = KvType::kF16;

Result<KvType> ParseKvType(std::string_view name);  // "f16" or "f32"
const char* KvTypeName(KvType type);

struct KvCacheShape {
  int64_t num_layers = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_size = 16;  // token slots per block
  int64_t num_blocks = 0;
  KvType type = kDefaultKvType;

  int64_t ElementsPerBlock() const { return num_kv_heads * block_size * head_dim; }
  // Bytes of K and V over all layers for one block.
  uint64_t BytesPerBlock() const;
  Status Validate() const;
};

class KvCache {
 public:
  static Result<std::unique_ptr<KvCache>> Create(const KvCacheShape& shape);

  const KvCacheShape& shape() const { return shape_; }

  // Writes one token's keys and values (num_kv_heads * head_dim floats each, head after head)
  // into `slot` of `block`, converted to the cache's type (F16: round to nearest even).
  void Store(int64_t layer, int32_t block, int64_t slot, const float* k, const float* v);

  // What attention reads for one KV head of one layer; the caller sets block_table.
  PagedKvHead Head(int64_t layer, int64_t kv_head) const;

  uint64_t TotalBytes() const { return 2 * bytes_; }

 private:
  explicit KvCache(const KvCacheShape& shape) : shape_(shape) {}
  // Byte offset of (layer, block, kv_head, slot).
  size_t Offset(int64_t layer, int64_t block, int64_t kv_head, int64_t slot) const;

  uint8_t* keys() const { return static_cast<uint8_t*>(keys_.data()); }
  uint8_t* values() const { return static_cast<uint8_t*>(values_.data()); }

  KvCacheShape shape_;
  size_t bytes_ = 0;  // of keys_ and of values_
  // [num_layers][num_blocks][ElementsPerBlock] of shape_.type, on huge pages
  // (core/huge_pages.h): attention visits each sequence's blocks scattered over the whole
  // cache, a new 4 KiB page almost every block. Zen 4, 2 threads, the attention of one
  // 32-sequence decode step replayed (30 layers x 3 KV heads, 80 positions each, 2912 blocks,
  // caches flushed): median ~7.2 ms on 4 KiB pages, ~5.8 ms on huge pages (15 runs each).
  HugePageBuffer keys_;
  HugePageBuffer values_;  // same
};

// Number of blocks needed for `num_tokens` positions.
inline int64_t BlocksForTokens(int64_t num_tokens, int64_t block_size) {
  return (num_tokens + block_size - 1) / block_size;
}

}  // namespace jisu
