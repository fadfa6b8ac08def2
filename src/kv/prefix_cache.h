// Prefix cache: decides which full KV blocks are cached and finds the longest cached chain for a
// new prompt, on top of BlockPool's cached-block primitives (the pool owns refs, hashes and the
// free list; this class owns the caching mode, the shared-mode promotion rule and hit stats).
//
// Modes:
//   off     nothing is cached; lookups miss.
//   shared  (default) keeps blocks of system/developer messages (BlockKind::kShared) and blocks
//           reused across tenants: a private block is cached while in use (concurrent requests
//           can share it) but kept after its last reference only once a different tenant hit
//           it, or committed the same block (hash) earlier — remembered in a bounded ghost set
//           of the last num_blocks private hashes. A tenant's own multi-turn history is not kept.
//   full    keeps every committed block, including each tenant's private history.
// The caller (scheduler) keeps per sequence the running parent hash: kRootBlockHash for the
// first block, then the value CommitFullBlock (or FindCachedPrefix's last_hash) returned.
// Never write into a block returned by FindCachedPrefix or committed here: it may be shared.
// Not thread-safe (engine loop thread).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "jisu/status.h"
#include "kv/block_pool.h"
#include "kv/prefix_cache_hash.h"
#include "kv/prefix_cache_index.h"

namespace jisu {

enum class PrefixCacheMode { kOff, kShared, kFull };
// Parses "off" | "shared" | "full" (the --prefix-cache flag).
Result<PrefixCacheMode> ParsePrefixCacheMode(std::string_view text);

enum class BlockKind {
  kShared,   // system/developer prompt content: worth keeping in `shared` mode
  kPrivate,  // user history / generated tokens: kept in `full` mode, or once reused across tenants
};

struct PrefixHitStats {
  int64_t query_tokens = 0;  // prompt tokens looked up
  int64_t hit_tokens = 0;    // of which served from cache
  double HitRate() const { return query_tokens ? double(hit_tokens) / double(query_tokens) : 0; }
};

struct PrefixCacheStats {
  int64_t lookups = 0;
  PrefixHitStats total;
  int64_t commits = 0;            // blocks registered as cached
  int64_t duplicate_commits = 0;  // blocks whose hash was already cached (left private)
  int64_t cached_blocks = 0;      // from the pool
  int64_t evictions = 0;          // from the pool
};

// One tenant's view: its lookups and the cached blocks it alone owns (blocks shared by several
// tenants are counted under kMultiTenant; see BlockPool::num_cached_owned_by).
struct TenantPrefixStats {
  TenantId tenant = 0;
  PrefixHitStats hits;
  int64_t cached_blocks = 0;
};

class PrefixCache {
 public:
  // `pool` must outlive this object.
  PrefixCache(BlockPool* pool, PrefixCacheMode mode);

  PrefixCacheMode mode() const { return mode_; }

  // The longest chain of cached full blocks that prefixes `tokens` under `salt`, at most
  // (tokens.size() - 1) / block_size blocks so that at least one token is left to compute.
  // Takes a reference on each returned block for `tenant` (to be dropped with pool->Free).
  // `*last_hash` (if given) is the hash of the last returned block, or kRootBlockHash.
  std::vector<int32_t> FindCachedPrefix(std::span<const int32_t> tokens, std::string_view salt,
                                        TenantId tenant, uint64_t* last_hash = nullptr);

  // Registers in-use block `block_id`, now holding the KV of `tokens` (exactly block_size ids)
  // after the chain ending in `parent_hash`, as cached according to the mode. Returns the
  // block's hash, the parent hash for the sequence's next block (returned in every mode).
  // If another block already caches this hash, `block_id` stays private (freed normally).
  uint64_t CommitFullBlock(int32_t block_id, uint64_t parent_hash, std::span<const int32_t> tokens,
                           std::string_view salt, TenantId tenant, BlockKind kind);

  PrefixCacheStats stats() const;
  // Zeros for a tenant never looked up.
  PrefixHitStats tenant_stats(TenantId tenant) const;
  // Hit stats and cached blocks of `tenant` (kMultiTenant: blocks shared by several tenants,
  // no hits); tenant_reports(): every tenant that has looked up, in id order (allocates).
  TenantPrefixStats tenant_report(TenantId tenant) const;
  std::vector<TenantPrefixStats> tenant_reports() const;
  // 1 + the largest tenant id that has looked up (0 if none).
  int64_t num_tenants() const { return static_cast<int64_t>(tenant_stats_.size()); }

 private:
  // Shared mode: records that `tenant` committed private block `hash`; returns true if a
  // different tenant committed it before (reuse across tenants).
  bool SeenByOtherTenant(uint64_t hash, TenantId tenant);

  BlockPool* pool_;
  PrefixCacheMode mode_;
  PrefixCacheStats stats_;
  std::vector<PrefixHitStats> tenant_stats_;  // [tenant]
  BlockHashIndex ghost_;                      // private block hash -> first committing tenant
  std::vector<uint64_t> ghost_ring_;          // FIFO of ghost_ keys, bounds its size
  size_t ghost_next_ = 0;
};

}  // namespace jisu
