// Eviction policy for cached KV blocks: which unreferenced cached block gives its memory back
// when the block pool has no free block. The pool (mechanism) owns ref counts, hashes and the
// free list; it tells the policy when a cached block becomes evictable (Insert) or stops being
// evictable (Erase: revived by a prefix hit), and asks it for a victim (PopVictim). The policy
// only orders block ids; it never touches pool state.
// Contract: a block id is inserted at most once until it is erased or popped; Erase is only
// called for inserted blocks. Every operation is O(log num_tenants) or better and does not
// allocate once the policy has seen every tenant (per-block arrays are sized by Init).
// Not thread-safe: the engine loop owns the pool and its policy.
#pragma once

#include <cstdint>
#include <memory>

namespace jisu {

// Small dense non-negative ids interned by the engine (per user / API key). Per-tenant state is
// kept in vectors indexed by the id.
using TenantId = int32_t;
// A cached block used by more than one tenant is accounted to all of them: "multi-tenant".
inline constexpr TenantId kMultiTenant = -1;

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  // Called once by the pool before any other call; block ids are in [0, num_blocks).
  virtual void Init(int32_t num_blocks) = 0;
  // `block_id` became evictable; `owner` is its single tenant or kMultiTenant. A block inserted
  // later counts as more recently used than every block already present.
  virtual void Insert(int32_t block_id, TenantId owner) = 0;
  virtual void Erase(int32_t block_id) = 0;
  // Removes and returns the block to evict, or -1 when no block is evictable.
  virtual int32_t PopVictim() = 0;
  virtual int64_t size() const = 0;
  virtual const char* name() const = 0;
};

// Default. Tenants holding more than their fair share of evictable blocks lose blocks first:
// the victim comes from the tenant with the most single-tenant evictable blocks (always at or
// above the fair share = evictable single-tenant blocks / tenants holding some), ties going to
// the tenant whose least recently used block is oldest; LRU within that tenant. Multi-tenant
// blocks are evicted only when no single-tenant block is evictable, LRU among themselves.
std::unique_ptr<EvictionPolicy> MakeTenantFairEvictionPolicy();

// Plain global LRU, ignoring tenants (for comparison studies).
std::unique_ptr<EvictionPolicy> MakeLruEvictionPolicy();

}  // namespace jisu
