#include "kv/block_pool.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace jisu {

Status BlockPool::Validate(int64_t num_blocks, int64_t block_size) {
  if (num_blocks < 1 || num_blocks > (int64_t{1} << 30)) {
    return Status::InvalidArgument("KV block pool: num_blocks must be in [1, 2^30], got " +
                                   std::to_string(num_blocks));
  }
  if (block_size < 1 || block_size > 4096) {
    return Status::InvalidArgument("KV block pool: block_size must be in [1, 4096], got " +
                                   std::to_string(block_size));
  }
  return Status::Ok();
}

BlockPool::BlockPool(int32_t num_blocks, int32_t block_size, std::unique_ptr<EvictionPolicy> policy)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      policy_(policy ? std::move(policy) : MakeTenantFairEvictionPolicy()),
      ref_(num_blocks, 0),
      state_(num_blocks, State::kFree),
      cached_(num_blocks, 0),
      retain_(num_blocks, 0),
      hash_(num_blocks, 0),
      parent_hash_(num_blocks, 0),
      salt_hash_(num_blocks, 0),
      owner_(num_blocks, kMultiTenant),
      tokens_(static_cast<size_t>(num_blocks) * block_size, 0),
      index_(num_blocks) {
  assert(Validate(num_blocks, block_size).ok());
  policy_->Init(num_blocks);
  free_stack_.reserve(num_blocks);
  // Highest id at the bottom so that a fresh pool hands out 0, 1, 2, ...
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_stack_.push_back(b);
}

void BlockPool::Uncache(int32_t b) {
  assert(cached_[b]);
  const bool erased = index_.Erase(hash_[b]);
  assert(erased);
  (void)erased;
  cached_[b] = 0;
  retain_[b] = 0;
  AccountOwner(owner_[b], -1);
  owner_[b] = kMultiTenant;
}

void BlockPool::AccountOwner(TenantId owner, int64_t delta) {
  if (owner == kMultiTenant) {
    num_cached_multi_tenant_ += delta;
    return;
  }
  if (static_cast<size_t>(owner) >= cached_by_tenant_.size()) {
    cached_by_tenant_.resize(static_cast<size_t>(owner) + 1, 0);  // once per new tenant
  }
  cached_by_tenant_[static_cast<size_t>(owner)] += delta;
}

int64_t BlockPool::num_cached_owned_by(TenantId tenant) const {
  if (tenant == kMultiTenant) return num_cached_multi_tenant_;
  if (tenant < 0 || static_cast<size_t>(tenant) >= cached_by_tenant_.size()) return 0;
  return cached_by_tenant_[static_cast<size_t>(tenant)];
}

int32_t BlockPool::TakeOne() {
  int32_t b;
  if (!free_stack_.empty()) {
    b = free_stack_.back();
    free_stack_.pop_back();
  } else {
    b = policy_->PopVictim();
    assert(b >= 0 && state_[b] == State::kEvictable);
    Uncache(b);
    ++num_evictions_;
  }
  assert(ref_[b] == 0);
  ref_[b] = 1;
  state_[b] = State::kInUse;
  ++num_in_use_;
  return b;
}

bool BlockPool::AllocateInto(int64_t n, std::vector<int32_t>* out) {
  if (!CanAllocate(n)) return false;
  for (int64_t i = 0; i < n; ++i) out->push_back(TakeOne());
  return true;
}

std::optional<std::vector<int32_t>> BlockPool::Allocate(int64_t n) {
  if (!CanAllocate(n)) return std::nullopt;
  std::vector<int32_t> out;
  out.reserve(n);
  AllocateInto(n, &out);
  return out;
}

void BlockPool::Free(std::span<const int32_t> block_ids) {
  for (auto it = block_ids.rbegin(); it != block_ids.rend(); ++it) {
    const int32_t b = *it;
    assert(b >= 0 && b < num_blocks_ && state_[b] == State::kInUse && ref_[b] > 0);
    if (--ref_[b] > 0) continue;
    --num_in_use_;
    if (cached_[b] && retain_[b]) {
      state_[b] = State::kEvictable;
      policy_->Insert(b, owner_[b]);
    } else {
      if (cached_[b]) Uncache(b);
      state_[b] = State::kFree;
      free_stack_.push_back(b);
    }
  }
}

BlockPoolStats BlockPool::stats() const {
  BlockPoolStats s;
  s.num_blocks = num_blocks_;
  s.num_in_use = num_in_use_;
  s.num_evictable = policy_->size();
  s.num_free = num_free();
  s.num_cached = index_.size();
  s.num_evictions = num_evictions_;
  return s;
}

double BlockPool::Fragmentation(std::span<const int64_t> num_tokens,
                                std::span<const int64_t> num_blocks, int64_t block_size) {
  assert(num_tokens.size() == num_blocks.size());
  int64_t slots = 0, used = 0;
  for (size_t i = 0; i < num_tokens.size(); ++i) {
    slots += num_blocks[i] * block_size;
    used += std::min(num_tokens[i], num_blocks[i] * block_size);
  }
  return slots > 0 ? double(slots - used) / double(slots) : 0.0;
}

int32_t BlockPool::FindCached(uint64_t hash, uint64_t parent_hash, uint64_t salt_hash,
                              std::span<const int32_t> tokens) const {
  assert(tokens.size() == static_cast<size_t>(block_size_));
  const int32_t b = index_.Find(hash);
  if (b < 0) return -1;
  if (parent_hash_[b] != parent_hash || salt_hash_[b] != salt_hash) return -1;
  if (!std::equal(tokens.begin(), tokens.end(), cached_tokens(b).begin())) return -1;
  return b;
}

bool BlockPool::AcquireCached(int32_t b, TenantId tenant) {
  assert(cached_[b]);
  if (state_[b] == State::kEvictable) {
    policy_->Erase(b);
    state_[b] = State::kInUse;
    ++num_in_use_;
  }
  ++ref_[b];
  if (owner_[b] != kMultiTenant && owner_[b] != tenant) {
    AccountOwner(owner_[b], -1);
    AccountOwner(kMultiTenant, +1);
    owner_[b] = kMultiTenant;
    return true;
  }
  return false;
}

BlockPool::RegisterResult BlockPool::RegisterCached(int32_t b, uint64_t hash, uint64_t parent_hash,
                                                    uint64_t salt_hash,
                                                    std::span<const int32_t> tokens,
                                                    TenantId tenant, bool retain,
                                                    int32_t* existing) {
  assert(state_[b] == State::kInUse && !cached_[b] && tenant >= 0);
  assert(tokens.size() == static_cast<size_t>(block_size_));
  if (!index_.Insert(hash, b)) {
    if (existing) *existing = index_.Find(hash);
    return RegisterResult::kDuplicate;
  }
  cached_[b] = 1;
  retain_[b] = retain ? 1 : 0;
  hash_[b] = hash;
  parent_hash_[b] = parent_hash;
  salt_hash_[b] = salt_hash;
  owner_[b] = tenant;
  AccountOwner(tenant, +1);
  std::copy(tokens.begin(), tokens.end(), tokens_.begin() + static_cast<size_t>(b) * block_size_);
  return RegisterResult::kRegistered;
}

void BlockPool::SetRetain(int32_t b) {
  assert(cached_[b]);
  retain_[b] = 1;
}

Status BlockPool::CheckInvariants() const {
  int64_t n_free = 0, n_use = 0, n_evict = 0, n_cached = 0;
  std::vector<uint8_t> on_free(num_blocks_, 0);
  for (int32_t b : free_stack_) {
    if (b < 0 || b >= num_blocks_ || on_free[b]) {
      return Status::Internal("free stack holds a bad or repeated id " + std::to_string(b));
    }
    on_free[b] = 1;
  }
  for (int32_t b = 0; b < num_blocks_; ++b) {
    const std::string id = "block " + std::to_string(b);
    switch (state_[b]) {
      case State::kFree:
        ++n_free;
        if (ref_[b] != 0 || cached_[b] || !on_free[b]) {
          return Status::Internal(id + ": free but referenced, cached or off the free stack");
        }
        break;
      case State::kInUse:
        ++n_use;
        if (ref_[b] <= 0 || on_free[b]) return Status::Internal(id + ": in use but ref <= 0");
        break;
      case State::kEvictable:
        ++n_evict;
        if (ref_[b] != 0 || !cached_[b] || !retain_[b] || on_free[b]) {
          return Status::Internal(id + ": evictable but referenced or not retained");
        }
        break;
    }
    if (cached_[b]) {
      ++n_cached;
      if (index_.Find(hash_[b]) != b) return Status::Internal(id + ": not indexed by its hash");
    }
  }
  if (n_free != num_free() || n_use != num_in_use_ || n_evict != policy_->size() ||
      n_cached != index_.size()) {
    return Status::Internal("block pool counters disagree with block states");
  }
  std::vector<int64_t> by_tenant(cached_by_tenant_.size(), 0);
  int64_t multi = 0;
  for (int32_t b = 0; b < num_blocks_; ++b) {
    if (!cached_[b]) continue;
    if (owner_[b] == kMultiTenant) {
      ++multi;
    } else if (owner_[b] < 0 || static_cast<size_t>(owner_[b]) >= by_tenant.size()) {
      return Status::Internal("cached block " + std::to_string(b) + " has an unaccounted owner");
    } else {
      ++by_tenant[static_cast<size_t>(owner_[b])];
    }
  }
  if (multi != num_cached_multi_tenant_ || by_tenant != cached_by_tenant_) {
    return Status::Internal("per-tenant cached-block counts disagree with block owners");
  }
  return Status::Ok();
}

}  // namespace jisu
