// The plain LRU policy; the tenant-fair default lives in eviction_policy_tenant_fair.cc.
#include "kv/eviction_policy.h"

#include "kv/eviction_policy_list.h"

namespace jisu {
namespace {

class LruEvictionPolicy final : public EvictionPolicy {
 public:
  void Init(int32_t num_blocks) override { links_.Init(num_blocks); }
  void Insert(int32_t block_id, TenantId) override { links_.PushBack(lru_, block_id); }
  void Erase(int32_t block_id) override { links_.Unlink(lru_, block_id); }
  int32_t PopVictim() override { return links_.PopFront(lru_); }
  int64_t size() const override { return lru_.size; }
  const char* name() const override { return "lru"; }

 private:
  BlockLinks links_;
  BlockList lru_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> MakeLruEvictionPolicy() {
  return std::make_unique<LruEvictionPolicy>();
}

}  // namespace jisu
