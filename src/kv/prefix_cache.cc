#include "kv/prefix_cache.h"

#include <cassert>
#include <string>

namespace jisu {

Result<PrefixCacheMode> ParsePrefixCacheMode(std::string_view text) {
  if (text == "off") return PrefixCacheMode::kOff;
  if (text == "shared") return PrefixCacheMode::kShared;
  if (text == "full") return PrefixCacheMode::kFull;
  return Status::InvalidArgument("prefix cache mode must be off, shared or full, got '" +
                                 std::string(text) + "'");
}

PrefixCache::PrefixCache(BlockPool* pool, PrefixCacheMode mode)
    : pool_(pool), mode_(mode), ghost_(mode == PrefixCacheMode::kShared ? pool->num_blocks() : 0) {
  if (mode_ == PrefixCacheMode::kShared) ghost_ring_.reserve(pool->num_blocks());
}

std::vector<int32_t> PrefixCache::FindCachedPrefix(std::span<const int32_t> tokens,
                                                   std::string_view salt, TenantId tenant,
                                                   uint64_t* last_hash) {
  assert(tenant >= 0);
  if (static_cast<size_t>(tenant) >= tenant_stats_.size()) tenant_stats_.resize(tenant + 1);
  std::vector<int32_t> hit;
  uint64_t parent = kRootBlockHash;
  if (mode_ != PrefixCacheMode::kOff && !tokens.empty()) {
    const size_t bs = static_cast<size_t>(pool_->block_size());
    const size_t max_blocks = (tokens.size() - 1) / bs;
    const uint64_t salt_hash = HashCacheSalt(salt);
    for (size_t i = 0; i < max_blocks; ++i) {
      const auto block_tokens = tokens.subspan(i * bs, bs);
      const uint64_t hash = HashBlockTokens(parent, block_tokens, salt_hash);
      const int32_t b = pool_->FindCached(hash, parent, salt_hash, block_tokens);
      if (b < 0) break;
      hit.push_back(b);
      parent = hash;
    }
    // References are taken after the walk so that a miss leaves the pool untouched.
    for (int32_t b : hit) {
      if (pool_->AcquireCached(b, tenant) && mode_ == PrefixCacheMode::kShared) {
        pool_->SetRetain(b);
      }
    }
  }
  const int64_t hit_tokens = static_cast<int64_t>(hit.size()) * pool_->block_size();
  ++stats_.lookups;
  stats_.total.query_tokens += static_cast<int64_t>(tokens.size());
  stats_.total.hit_tokens += hit_tokens;
  tenant_stats_[tenant].query_tokens += static_cast<int64_t>(tokens.size());
  tenant_stats_[tenant].hit_tokens += hit_tokens;
  if (last_hash) *last_hash = parent;
  return hit;
}

bool PrefixCache::SeenByOtherTenant(uint64_t hash, TenantId tenant) {
  const int32_t first = ghost_.Find(hash);
  if (first >= 0) return first != tenant;
  if (ghost_ring_.size() < ghost_ring_.capacity()) {
    ghost_ring_.push_back(hash);
  } else {
    if (ghost_ring_.empty()) return false;
    ghost_.Erase(ghost_ring_[ghost_next_]);
    ghost_ring_[ghost_next_] = hash;
    ghost_next_ = (ghost_next_ + 1) % ghost_ring_.size();
  }
  ghost_.Insert(hash, tenant);
  return false;
}

uint64_t PrefixCache::CommitFullBlock(int32_t block_id, uint64_t parent_hash,
                                      std::span<const int32_t> tokens, std::string_view salt,
                                      TenantId tenant, BlockKind kind) {
  assert(tenant >= 0);
  assert(tokens.size() == static_cast<size_t>(pool_->block_size()));
  const uint64_t salt_hash = HashCacheSalt(salt);
  const uint64_t hash = HashBlockTokens(parent_hash, tokens, salt_hash);
  if (mode_ == PrefixCacheMode::kOff) return hash;

  bool retain = mode_ == PrefixCacheMode::kFull || kind == BlockKind::kShared;
  if (!retain && SeenByOtherTenant(hash, tenant)) retain = true;
  int32_t existing = -1;
  const auto result = pool_->RegisterCached(block_id, hash, parent_hash, salt_hash, tokens, tenant,
                                            retain, &existing);
  if (result == BlockPool::RegisterResult::kRegistered) {
    ++stats_.commits;
  } else {
    ++stats_.duplicate_commits;
    // Another request computed the same block: evidence of reuse for the cached copy.
    if (retain || pool_->owner(existing) != tenant) pool_->SetRetain(existing);
  }
  return hash;
}

PrefixCacheStats PrefixCache::stats() const {
  PrefixCacheStats s = stats_;
  const BlockPoolStats p = pool_->stats();
  s.cached_blocks = p.num_cached;
  s.evictions = p.num_evictions;
  return s;
}

PrefixHitStats PrefixCache::tenant_stats(TenantId tenant) const {
  if (tenant < 0 || static_cast<size_t>(tenant) >= tenant_stats_.size()) return {};
  return tenant_stats_[tenant];
}

TenantPrefixStats PrefixCache::tenant_report(TenantId tenant) const {
  TenantPrefixStats r;
  r.tenant = tenant;
  r.hits = tenant_stats(tenant);
  r.cached_blocks = pool_->num_cached_owned_by(tenant);
  return r;
}

std::vector<TenantPrefixStats> PrefixCache::tenant_reports() const {
  std::vector<TenantPrefixStats> out;
  out.reserve(tenant_stats_.size());
  for (size_t t = 0; t < tenant_stats_.size(); ++t) {
    out.push_back(tenant_report(static_cast<TenantId>(t)));
  }
  return out;
}

}  // namespace jisu
