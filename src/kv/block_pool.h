// The paged-KV block pool: the one owner of block ids, reference counts, the free list and the
// registry of cached full blocks (hash -> block). The float storage of block b is KvCache's
// (kv_cache.h); this class only decides who holds which id. Policy stays outside: which cached
// block to evict is an injected EvictionPolicy, and what to cache (modes, hashing, hit stats)
// is PrefixCache's (prefix_cache.h), built on the cached-block primitives below.
//
// Every block is in exactly one state:
//   free       ref 0, not cached; on the free stack; contents meaningless.
//   in use     ref > 0; may be cached (registered under its hash, contents immutable).
//   evictable  ref 0, cached and retained; owned by the eviction policy, contents kept so a
//              prefix hit can revive it; evicted (un-hashed, handed out) only when no block is
//              free.
// Invariants: free + in use + evictable = num_blocks; a block is handed out only from free or
// evictable, so never to two holders; Allocate is all-or-nothing; a cached block's stored token
// ids are the ids it was registered with (lookups compare them, so a hit is exact).
// Cost: O(1) per block for Allocate/Free/lookup plus the policy's O(log tenants) per eviction;
// all per-block state is preallocated, so steady-state operation does not allocate (except the
// vector returned by the convenience Allocate).
// Not thread-safe: the engine loop thread owns the pool.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "jisu/status.h"
#include "kv/eviction_policy.h"
#include "kv/prefix_cache_index.h"

namespace jisu {

struct BlockPoolStats {
  int64_t num_blocks = 0;
  int64_t num_in_use = 0;
  int64_t num_evictable = 0;  // cached, unreferenced, reclaimable
  int64_t num_free = 0;
  int64_t num_cached = 0;  // registered under a hash (in use or evictable)
  int64_t num_evictions = 0;
  double Usage() const { return num_blocks ? double(num_in_use) / double(num_blocks) : 0.0; }
};

class BlockPool {
 public:
  // Checks the shape; the engine derives num_blocks from --kv-memory and must call this first.
  static Status Validate(int64_t num_blocks, int64_t block_size);

  // Preconditions (asserted): Validate(num_blocks, block_size) is Ok. `policy` defaults to
  // MakeTenantFairEvictionPolicy().
  BlockPool(int32_t num_blocks, int32_t block_size,
            std::unique_ptr<EvictionPolicy> policy = nullptr);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }

  // True if `n` blocks can be handed out now (free or by evicting cached blocks).
  bool CanAllocate(int64_t n) const { return n >= 0 && n <= num_available(); }
  // Blocks that can be handed out now: free ones plus evictable cached ones.
  int64_t num_available() const { return num_free() + policy_->size(); }
  // `n` blocks with ref count 1 each, or nullopt (and no change) if fewer are available.
  std::optional<std::vector<int32_t>> Allocate(int64_t n);
  // Same, appending to `*out` (a sequence's block table) without a temporary vector.
  bool AllocateInto(int64_t n, std::vector<int32_t>* out);
  // Drops one reference on each block. Pass a sequence's table in position order: blocks are
  // released last-to-first so that a chain's tail becomes evictable before its head (the head
  // is what other prompts share, and a tail without its head can never be hit).
  void Free(std::span<const int32_t> block_ids);

  int32_t ref_count(int32_t block_id) const { return ref_[block_id]; }
  bool is_cached(int32_t block_id) const { return cached_[block_id]; }
  int64_t num_free() const { return static_cast<int64_t>(free_stack_.size()); }
  BlockPoolStats stats() const;
  const EvictionPolicy& policy() const { return *policy_; }

  // Allocated-but-unused token slots / allocated slots over a set of sequences: sequence i holds
  // num_tokens[i] tokens in num_blocks[i] blocks. 0 when nothing is allocated.
  static double Fragmentation(std::span<const int64_t> num_tokens,
                              std::span<const int64_t> num_blocks, int64_t block_size);

  // ---- Cached-block primitives (used by PrefixCache) ----

  // The cached block registered under `hash` whose parent hash, salt hash and token ids equal
  // these, or -1. Does not take a reference.
  int32_t FindCached(uint64_t hash, uint64_t parent_hash, uint64_t salt_hash,
                     std::span<const int32_t> tokens) const;
  // Takes a reference on cached block `block_id` for `tenant` (an evictable block comes back
  // into use). Returns true if this made the block multi-tenant (a tenant other than its owner).
  bool AcquireCached(int32_t block_id, TenantId tenant);

  enum class RegisterResult { kRegistered, kDuplicate };
  // Registers in-use, not yet cached block `block_id` (a full block whose KV is computed) under
  // `hash`. `retain`: keep it evictable when its last reference goes (else it is un-hashed and
  // freed then). kDuplicate: another block already holds `hash`; nothing changes and
  // `*existing` (if given) is set to it; the caller's block stays private and is freed normally.
  RegisterResult RegisterCached(int32_t block_id, uint64_t hash, uint64_t parent_hash,
                                uint64_t salt_hash, std::span<const int32_t> tokens,
                                TenantId tenant, bool retain, int32_t* existing = nullptr);
  // Marks a cached block to be kept when unreferenced (PrefixCache's `shared` mode promotes a
  // block once it is reused across tenants).
  void SetRetain(int32_t block_id);
  TenantId owner(int32_t block_id) const { return owner_[block_id]; }
  // Cached blocks (in use or evictable) owned by `tenant` alone; kMultiTenant: those used by
  // several tenants. O(1): kept up to date as blocks are registered, shared and uncached.
  int64_t num_cached_owned_by(TenantId tenant) const;
  std::span<const int32_t> cached_tokens(int32_t block_id) const {
    return {tokens_.data() + static_cast<size_t>(block_id) * block_size_,
            static_cast<size_t>(block_size_)};
  }

  // Full consistency check (O(num_blocks)), for tests: states, counts, index and policy agree.
  Status CheckInvariants() const;

 private:
  enum class State : uint8_t { kFree, kInUse, kEvictable };
  int32_t TakeOne();  // precondition: a block is free or evictable
  void Uncache(int32_t block_id);
  void AccountOwner(TenantId owner, int64_t delta);

  int32_t num_blocks_;
  int32_t block_size_;
  std::unique_ptr<EvictionPolicy> policy_;
  std::vector<int32_t> free_stack_;  // LIFO: recently freed blocks are reused first
  std::vector<int32_t> ref_;         // [num_blocks]
  std::vector<State> state_;         // [num_blocks]
  std::vector<uint8_t> cached_;      // [num_blocks] registered in index_
  std::vector<uint8_t> retain_;      // [num_blocks] keep evictable at ref 0
  std::vector<uint64_t> hash_;       // [num_blocks] valid while cached
  std::vector<uint64_t> parent_hash_;
  std::vector<uint64_t> salt_hash_;
  std::vector<TenantId> owner_;  // [num_blocks] single tenant or kMultiTenant, while cached
  std::vector<int32_t> tokens_;  // [num_blocks][block_size] token ids, while cached
  BlockHashIndex index_;         // hash -> block id of cached blocks
  int64_t num_in_use_ = 0;
  int64_t num_evictions_ = 0;
  std::vector<int64_t> cached_by_tenant_;  // [tenant] cached blocks owned by that tenant alone
  int64_t num_cached_multi_tenant_ = 0;
};

}  // namespace jisu
