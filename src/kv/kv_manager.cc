#include "kv/kv_manager.h"

#include <cassert>
#include <string>

#include "kv/kv_cache.h"

namespace jisu {

KvManager::KvManager(BlockPool* pool, PrefixCache* cache)
    : pool_(pool),
      cache_(cache && cache->mode() != PrefixCacheMode::kOff ? cache : nullptr),
      block_size_(pool->block_size()) {
  assert(pool_ != nullptr);
}

KvManager::Seq& KvManager::Get(KvSeqId id) {
  auto it = seqs_.find(id);
  assert(it != seqs_.end() && "sequence not tracked by the KV manager");
  return it->second;
}

const KvManager::Seq& KvManager::Get(KvSeqId id) const {
  auto it = seqs_.find(id);
  assert(it != seqs_.end() && "sequence not tracked by the KV manager");
  return it->second;
}

int64_t KvManager::Admit(KvSeqId id, const KvSeqInfo& info, std::span<const int32_t> tokens) {
  auto [it, inserted] = seqs_.try_emplace(id);
  assert(inserted && "sequence admitted twice");
  (void)inserted;
  Seq& s = it->second;
  s.tenant = info.tenant;
  // Length-prefixed, so no (kv_key, salt) pair spells another's.
  s.cache_salt = std::to_string(info.kv_key.size()) + ":";
  s.cache_salt.append(info.kv_key).append(info.cache_salt);
  s.num_shared_prefix_tokens = info.num_shared_prefix_tokens;
  if (cache_) {
    s.table = cache_->FindCachedPrefix(tokens, s.cache_salt, s.tenant, &s.parent_hash);
    s.num_committed_blocks = static_cast<int64_t>(s.table.size());
  }
  // Host tier (KvLowerTier::MatchPrefix / Load) continues the lookup here, once it exists.
  return s.num_committed_blocks * block_size_;
}

int64_t KvManager::BlocksNeeded(KvSeqId id, int64_t num_tokens) const {
  const int64_t need =
      BlocksForTokens(num_tokens, block_size_) - static_cast<int64_t>(Get(id).table.size());
  return need > 0 ? need : 0;
}

bool KvManager::CanAllocate(KvSeqId id, int64_t num_tokens) const {
  return pool_->CanAllocate(BlocksNeeded(id, num_tokens));
}

bool KvManager::Allocate(KvSeqId id, int64_t num_tokens) {
  const int64_t need = BlocksNeeded(id, num_tokens);
  if (need == 0) return true;
  return pool_->AllocateInto(need, &Get(id).table);
}

int64_t KvManager::MaxAllocatableTokens(KvSeqId id) const {
  return (static_cast<int64_t>(Get(id).table.size()) + pool_->num_available()) * block_size_;
}

void KvManager::Commit(KvSeqId id, std::span<const int32_t> tokens, int64_t num_accepted) {
  Seq& s = Get(id);
  assert(num_accepted <= static_cast<int64_t>(tokens.size()));
  const int64_t num_full = num_accepted / block_size_;
  assert(num_full <= static_cast<int64_t>(s.table.size()));
  for (; s.num_committed_blocks < num_full; ++s.num_committed_blocks) {
    if (!cache_) continue;
    const int64_t b = s.num_committed_blocks;
    const auto block_tokens =
        tokens.subspan(static_cast<size_t>(b * block_size_), static_cast<size_t>(block_size_));
    const BlockKind kind = (b + 1) * block_size_ <= s.num_shared_prefix_tokens
                               ? BlockKind::kShared
                               : BlockKind::kPrivate;
    s.parent_hash = cache_->CommitFullBlock(s.table[static_cast<size_t>(b)], s.parent_hash,
                                            block_tokens, s.cache_salt, s.tenant, kind);
  }
}

void KvManager::Truncate(KvSeqId id, int64_t num_tokens) {
  Seq& s = Get(id);
  assert(num_tokens >= s.num_committed_blocks * block_size_ &&
         "rollback into committed (cached) blocks");
  const size_t keep = static_cast<size_t>(BlocksForTokens(num_tokens, block_size_));
  if (keep >= s.table.size()) return;
  pool_->Free(std::span<const int32_t>(s.table).subspan(keep));
  s.table.resize(keep);
}

void KvManager::Free(KvSeqId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  pool_->Free(it->second.table);
  seqs_.erase(it);
}

std::span<const int32_t> KvManager::block_table(KvSeqId id) const { return Get(id).table; }

int64_t KvManager::num_committed_blocks(KvSeqId id) const { return Get(id).num_committed_blocks; }

uint64_t KvManager::parent_hash(KvSeqId id) const { return Get(id).parent_hash; }

Status KvManager::CheckInvariants(bool sole_client) const {
  const size_t n = static_cast<size_t>(pool_->num_blocks());
  std::vector<int64_t> refs(n, 0);
  std::vector<int64_t> last_seq(n, -1);  // index of the last table that listed the block
  int64_t seq_index = 0;
  for (const auto& [id, s] : seqs_) {
    auto fail = [id = id](const std::string& what) {
      return Status::Internal("KV sequence " + std::to_string(id) + ": " + what);
    };
    if (s.num_committed_blocks < 0 ||
        s.num_committed_blocks > static_cast<int64_t>(s.table.size())) {
      return fail("more committed blocks than blocks");
    }
    if (s.num_committed_blocks == 0 && s.parent_hash != kRootBlockHash) {
      return fail("a parent hash without committed blocks");
    }
    for (int32_t b : s.table) {
      if (b < 0 || b >= pool_->num_blocks()) return fail("block id out of range");
      if (pool_->ref_count(b) <= 0) return fail("holds unreferenced block " + std::to_string(b));
      if (last_seq[static_cast<size_t>(b)] == seq_index) {
        return fail("lists block " + std::to_string(b) + " twice");
      }
      last_seq[static_cast<size_t>(b)] = seq_index;
      ++refs[static_cast<size_t>(b)];
    }
    ++seq_index;
  }
  for (int32_t b = 0; b < pool_->num_blocks(); ++b) {
    const int64_t r = refs[static_cast<size_t>(b)];
    // Tables share only cached blocks (prefix hits): an uncached block is one writer's.
    if (r > 1 && !pool_->is_cached(b)) {
      return Status::Internal("uncached block " + std::to_string(b) + " is in " +
                              std::to_string(r) + " tables");
    }
    if (sole_client && r != pool_->ref_count(b)) {
      return Status::Internal("block " + std::to_string(b) + ": pool ref count " +
                              std::to_string(pool_->ref_count(b)) + " but " + std::to_string(r) +
                              " block-table entries");
    }
  }
  return pool_->CheckInvariants();
}

}  // namespace jisu
