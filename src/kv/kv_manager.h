// The KV manager: the memory side of scheduling. It owns every running sequence's block table
// and prefix-cache hash chain, on top of the BlockPool (who holds which block id) and the
// PrefixCache (what is cached). The scheduler keeps the policy (who runs, how many tokens, who is
// preempted) and asks here for memory; it never touches a block id itself.
//
// A sequence's life: Admit (prefix-cache lookup: its cached prefix is referenced, not
// recomputed) -> Allocate to cover the tokens a step feeds -> Commit the full blocks of tokens
// whose KV is final -> Truncate when a step fed tokens that were not kept (rejected drafts) ->
// Free (finish, cancel, preemption).
//
// Why commit and rollback are split this way: a multi-token step (speculative decoding) writes
// the KV of draft tokens that may be rejected. Only the caller knows which tokens were accepted,
// so it commits up to the accepted length only; a block is hashed into the prefix cache only
// once every one of its tokens is accepted, and therefore nothing committed is ever rolled back.
// Truncate merely gives back whole blocks past the kept length; the slots of rejected tokens in
// a block that is partly kept are simply written again by a later step.
//
// Invariants per sequence: its table holds distinct references; the first num_committed_blocks
// were offered to the prefix cache (cached, or left private when an equal block was cached
// first) and parent_hash is the hash of the last of them (kRootBlockHash when none); blocks past
// them are never cached, so Truncate never frees a block another sequence may share. Tables
// share only cached blocks. Every pool reference taken here is in exactly one table, so pool ref
// counts equal table occurrences when the manager is the pool's only client (CheckInvariants).
// Allocate is all-or-nothing.
//
// Host-memory tier (not built yet): a second, larger tier below the device pool, as in vLLM's
// KV connector / SGLang's HiCache. It plugs in here, at two points only:
// (1) Admit, after the device-pool prefix lookup misses, continues the chain lookup in the tier
// and loads the hits into newly allocated blocks (the sequence then waits for the copy);
// (2) blocks leaving the device cache (eviction) are offered to the tier. Everything above this
// class (scheduler, engine) is unaffected: it still sees "N tokens of the prompt are cached".
// Not thread-safe: the engine loop thread owns it, like the pool and the cache.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "jisu/status.h"
#include "kv/block_pool.h"
#include "kv/prefix_cache.h"

namespace jisu {

// The scheduler's RequestId (kept as a plain integer so kv/ does not depend on sched/).
using KvSeqId = int64_t;

// What decides a sequence's cached blocks besides its tokens (see prefix_cache.h).
struct KvSeqInfo {
  TenantId tenant = 0;
  std::string_view cache_salt;  // copied by Admit
  // What else decides the K/V of equal tokens: the request options that change it (weight set,
  // matmul path, attention variant: KvCacheKeyOf). Joined with the salt into one hash-chain
  // key, so blocks computed under other numerics are never hits.
  std::string_view kv_key;
  // Leading tokens that are system/developer content: their full blocks are committed as
  // BlockKind::kShared.
  int64_t num_shared_prefix_tokens = 0;
};

class KvManager {
 public:
  // `pool` must outlive the manager; `cache` may be null (or mode off: no caching) and must then
  // also outlive it.
  KvManager(BlockPool* pool, PrefixCache* cache);

  int64_t block_size() const { return block_size_; }
  const BlockPool& pool() const { return *pool_; }
  bool caching() const { return cache_ != nullptr; }

  // Starts tracking sequence `id` (must not be tracked) and looks its tokens up in the prefix
  // cache, taking a reference on each hit block. Returns the number of leading tokens whose KV
  // is cached: a multiple of block_size, at most tokens.size() - 1.
  int64_t Admit(KvSeqId id, const KvSeqInfo& info, std::span<const int32_t> tokens);

  // Blocks the pool must hand out for `id`'s table to cover positions [0, num_tokens).
  int64_t BlocksNeeded(KvSeqId id, int64_t num_tokens) const;
  bool CanAllocate(KvSeqId id, int64_t num_tokens) const;
  // Grows `id`'s table to cover [0, num_tokens); false, and no change, if the pool cannot.
  bool Allocate(KvSeqId id, int64_t num_tokens);
  // The most positions `id`'s table could cover now (its blocks plus every block the pool can
  // hand out), for callers that can use fewer tokens than they asked for (drafts).
  int64_t MaxAllocatableTokens(KvSeqId id) const;

  // The KV of `tokens[0, num_accepted)` is final: commits the full blocks inside it that are not
  // committed yet (prefix-cache registration, hash chain). Never pass tokens whose KV may still
  // be rolled back. `tokens` is the sequence's whole token list (only [0, num_accepted) is read).
  void Commit(KvSeqId id, std::span<const int32_t> tokens, int64_t num_accepted);

  // Rollback: gives back the blocks past those covering [0, num_tokens). A block partly inside
  // stays. Precondition (asserted): num_tokens does not cut into a committed block.
  void Truncate(KvSeqId id, int64_t num_tokens);

  // Drops every reference `id` holds and stops tracking it. Blocks go back last-to-first (see
  // BlockPool::Free). No-op for an untracked id.
  void Free(KvSeqId id);

  bool Tracks(KvSeqId id) const { return seqs_.count(id) > 0; }
  int64_t num_sequences() const { return static_cast<int64_t>(seqs_.size()); }
  // The block table of tracked sequence `id`, in position order. Valid until the next call that
  // changes that sequence (Allocate, Truncate, Free).
  std::span<const int32_t> block_table(KvSeqId id) const;
  int64_t num_blocks(KvSeqId id) const { return static_cast<int64_t>(block_table(id).size()); }
  int64_t num_committed_blocks(KvSeqId id) const;
  uint64_t parent_hash(KvSeqId id) const;

  // Full check, for tests: each table's blocks are distinct, in range, in use, and committed
  // ones cached (when caching is on); with `sole_client`, pool ref counts equal table
  // occurrences (nobody else holds references).
  Status CheckInvariants(bool sole_client = true) const;

 private:
  struct Seq {
    std::vector<int32_t> table;
    int64_t num_committed_blocks = 0;
    uint64_t parent_hash = kRootBlockHash;
    TenantId tenant = 0;
    std::string cache_salt;  // the prefix cache's salt: the kv_key and the request's salt
    int64_t num_shared_prefix_tokens = 0;
  };
  Seq& Get(KvSeqId id);
  const Seq& Get(KvSeqId id) const;

  BlockPool* pool_;
  PrefixCache* cache_;  // null when caching is off
  int64_t block_size_;
  std::unordered_map<KvSeqId, Seq> seqs_;  // node-based: tables do not move when others change
};

}  // namespace jisu
