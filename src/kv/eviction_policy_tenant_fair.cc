// Tenant-fair eviction (see eviction_policy.h). Each tenant has an LRU list of its
// single-tenant evictable blocks; an indexed binary max-heap over tenants with a non-empty list
// orders them by (list size desc, age of their oldest block asc), so the victim tenant is the
// heap top. A tenant's key only moves one way per operation (insert: up; erase/pop: down), so one
// sift restores the heap: O(log num_tenants) per operation, no allocation after a tenant is seen.
#include <cassert>
#include <utility>
#include <vector>

#include "kv/eviction_policy.h"
#include "kv/eviction_policy_list.h"

namespace jisu {
namespace {

class TenantFairEvictionPolicy final : public EvictionPolicy {
 public:
  void Init(int32_t num_blocks) override {
    links_.Init(num_blocks);
    owner_.assign(num_blocks, kMultiTenant);
    stamp_.assign(num_blocks, 0);
  }

  void Insert(int32_t block_id, TenantId owner) override {
    owner_[block_id] = owner;
    stamp_[block_id] = ++clock_;
    ++size_;
    if (owner == kMultiTenant) {
      links_.PushBack(multi_, block_id);
      return;
    }
    assert(owner >= 0);
    if (static_cast<size_t>(owner) >= lists_.size()) {
      lists_.resize(owner + 1);
      heap_pos_.resize(owner + 1, -1);
    }
    links_.PushBack(lists_[owner], block_id);
    if (heap_pos_[owner] < 0) {
      heap_pos_[owner] = static_cast<int32_t>(heap_.size());
      heap_.push_back(owner);
    }
    SiftUp(heap_pos_[owner]);
  }

  void Erase(int32_t block_id) override {
    const TenantId owner = owner_[block_id];
    --size_;
    if (owner == kMultiTenant) {
      links_.Unlink(multi_, block_id);
      return;
    }
    links_.Unlink(lists_[owner], block_id);
    Demoted(owner);
  }

  int32_t PopVictim() override {
    if (!heap_.empty()) {
      const TenantId t = heap_[0];
      const int32_t b = links_.PopFront(lists_[t]);
      --size_;
      Demoted(t);
      return b;
    }
    const int32_t b = links_.PopFront(multi_);
    if (b >= 0) --size_;
    return b;
  }

  int64_t size() const override { return size_; }
  const char* name() const override { return "tenant-fair"; }

 private:
  // True if tenant a should lose a block before tenant b.
  bool Before(TenantId a, TenantId b) const {
    const BlockList& la = lists_[a];
    const BlockList& lb = lists_[b];
    if (la.size != lb.size) return la.size > lb.size;
    return stamp_[la.head] < stamp_[lb.head];
  }

  // Tenant t lost a block (its key only got weaker): sift down or leave the heap.
  void Demoted(TenantId t) {
    int32_t pos = heap_pos_[t];
    assert(pos >= 0);
    if (lists_[t].size > 0) {
      SiftDown(pos);
      return;
    }
    const TenantId last = heap_.back();
    heap_.pop_back();
    heap_pos_[t] = -1;
    if (last == t) return;
    heap_[pos] = last;
    heap_pos_[last] = pos;
    // The moved tenant may belong above or below the hole.
    SiftUp(pos);
    SiftDown(heap_pos_[last]);
  }

  void SiftUp(int32_t pos) {
    while (pos > 0) {
      const int32_t parent = (pos - 1) / 2;
      if (!Before(heap_[pos], heap_[parent])) break;
      Swap(pos, parent);
      pos = parent;
    }
  }

  void SiftDown(int32_t pos) {
    const int32_t n = static_cast<int32_t>(heap_.size());
    for (;;) {
      int32_t best = pos;
      for (int32_t c = 2 * pos + 1; c <= 2 * pos + 2 && c < n; ++c) {
        if (Before(heap_[c], heap_[best])) best = c;
      }
      if (best == pos) return;
      Swap(pos, best);
      pos = best;
    }
  }

  void Swap(int32_t i, int32_t j) {
    std::swap(heap_[i], heap_[j]);
    heap_pos_[heap_[i]] = i;
    heap_pos_[heap_[j]] = j;
  }

  BlockLinks links_;
  std::vector<TenantId> owner_;  // [num_blocks], valid while the block is inserted
  std::vector<uint64_t> stamp_;  // [num_blocks], insertion time: smaller = less recently used
  uint64_t clock_ = 0;
  int64_t size_ = 0;
  BlockList multi_;
  std::vector<BlockList> lists_;   // [num_tenants seen]
  std::vector<int32_t> heap_pos_;  // [num_tenants seen], -1 when not in the heap
  std::vector<TenantId> heap_;     // tenants with a non-empty list, max-heap by Before
};

}  // namespace

std::unique_ptr<EvictionPolicy> MakeTenantFairEvictionPolicy() {
  return std::make_unique<TenantFairEvictionPolicy>();
}

}  // namespace jisu
