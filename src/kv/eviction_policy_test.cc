#include "kv/eviction_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace jisu {
namespace {

std::vector<int32_t> Drain(EvictionPolicy& p) {
  std::vector<int32_t> out;
  for (int32_t b; (b = p.PopVictim()) >= 0;) out.push_back(b);
  EXPECT_EQ(p.size(), 0);
  return out;
}

TEST(EvictionPolicyTest, LruEvictsLeastRecentlyInsertedFirst) {
  auto p = MakeLruEvictionPolicy();
  p->Init(8);
  for (int32_t b : {3, 1, 4, 5}) p->Insert(b, b % 2);
  p->Erase(4);
  p->Insert(4, 0);  // revived and released again: now most recent
  EXPECT_EQ(p->size(), 4);
  EXPECT_EQ(Drain(*p), (std::vector<int32_t>{3, 1, 5, 4}));
}

TEST(EvictionPolicyTest, TenantFairTakesFromTheLargestTenantThenMultiTenantLast) {
  auto p = MakeTenantFairEvictionPolicy();
  p->Init(16);
  p->Insert(0, 0);  // tenant 0: {0, 1}
  p->Insert(1, 0);
  p->Insert(2, kMultiTenant);                       // shared by several tenants, oldest of all
  for (int32_t b = 3; b < 7; ++b) p->Insert(b, 1);  // tenant 1: {3, 4, 5, 6}
  p->Insert(7, 2);                                  // tenant 2: {7}
  // Tenant 1 is above its fair share (7 single-tenant / 3 tenants): it loses 3 then 4,
  // then ties go to the tenant whose LRU block is oldest.
  EXPECT_EQ(Drain(*p), (std::vector<int32_t>{3, 4, 0, 5, 1, 6, 7, 2}));
}

TEST(EvictionPolicyTest, TenantFairEraseKeepsOrder) {
  auto p = MakeTenantFairEvictionPolicy();
  p->Init(16);
  for (int32_t b = 0; b < 3; ++b) p->Insert(b, 0);
  for (int32_t b = 3; b < 5; ++b) p->Insert(b, 1);
  p->Erase(0);  // tenant 0 now {1, 2}, tenant 1 {3, 4}; tenant 0's LRU block is older
  p->Erase(1);
  p->Erase(2);  // tenant 0 leaves the heap
  p->Insert(9, 0);
  EXPECT_EQ(p->size(), 3);
  EXPECT_EQ(Drain(*p), (std::vector<int32_t>{3, 4, 9}));
}

}  // namespace
}  // namespace jisu
