#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace jisu {
namespace {

std::vector<int32_t> Tokens(int32_t first, int32_t n) {
  std::vector<int32_t> t(n);
  for (int32_t i = 0; i < n; ++i) t[i] = first + i;
  return t;
}

TEST(BlockPoolTest, ValidateNamesBadShape) {
  EXPECT_TRUE(BlockPool::Validate(8, 16).ok());
  EXPECT_FALSE(BlockPool::Validate(0, 16).ok());
  EXPECT_FALSE(BlockPool::Validate(8, 0).ok());
  EXPECT_NE(BlockPool::Validate(-1, 16).message().find("num_blocks"), std::string::npos);
}

TEST(BlockPoolTest, AllocateAndFreeTrackRefCounts) {
  BlockPool pool(4, 16);
  auto a = pool.Allocate(3);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a, (std::vector<int32_t>{0, 1, 2}));
  for (int32_t b : *a) EXPECT_EQ(pool.ref_count(b), 1);
  BlockPoolStats s = pool.stats();
  EXPECT_EQ(s.num_in_use, 3);
  EXPECT_EQ(s.num_free, 1);
  EXPECT_EQ(s.num_evictable, 0);
  EXPECT_DOUBLE_EQ(s.Usage(), 0.75);
  pool.Free(*a);
  for (int32_t b : *a) EXPECT_EQ(pool.ref_count(b), 0);
  EXPECT_EQ(pool.stats().num_free, 4);
  EXPECT_EQ(pool.stats().num_in_use, 0);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, NeverHandsOutABlockTwice) {
  BlockPool pool(64, 4);
  std::set<int32_t> seen;
  std::vector<int32_t> table;
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(pool.AllocateInto(4, &table));
  for (int32_t b : table) EXPECT_TRUE(seen.insert(b).second) << b;
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_FALSE(pool.Allocate(1).has_value());
  // Freed blocks come back, still never to two holders at once.
  pool.Free(std::span<const int32_t>(table).subspan(10, 5));
  auto again = pool.Allocate(5);
  ASSERT_TRUE(again.has_value());
  std::set<int32_t> again_set(again->begin(), again->end());
  EXPECT_EQ(again_set, std::set<int32_t>(table.begin() + 10, table.begin() + 15));
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, NulloptInsteadOfPartialAllocation) {
  BlockPool pool(4, 16);
  ASSERT_TRUE(pool.Allocate(3).has_value());
  EXPECT_FALSE(pool.CanAllocate(2));
  EXPECT_TRUE(pool.CanAllocate(1));
  EXPECT_FALSE(pool.Allocate(2).has_value());
  std::vector<int32_t> table = {99};
  EXPECT_FALSE(pool.AllocateInto(2, &table));
  EXPECT_EQ(table, std::vector<int32_t>{99});
  EXPECT_EQ(pool.stats().num_free, 1);
  EXPECT_EQ(pool.stats().num_in_use, 3);
}

TEST(BlockPoolTest, SharedBlockReturnsOnlyWithLastReference) {
  BlockPool pool(2, 4);
  auto a = *pool.Allocate(1);
  const auto toks = Tokens(0, 4);
  ASSERT_EQ(pool.RegisterCached(a[0], 42, 0, 0, toks, 0, /*retain=*/false),
            BlockPool::RegisterResult::kRegistered);
  pool.AcquireCached(a[0], 0);
  EXPECT_EQ(pool.ref_count(a[0]), 2);
  pool.Free(a);
  EXPECT_EQ(pool.ref_count(a[0]), 1);
  EXPECT_EQ(pool.stats().num_in_use, 1);
  pool.Free(a);
  // Not retained: un-hashed and free at once.
  EXPECT_EQ(pool.stats().num_free, 2);
  EXPECT_EQ(pool.stats().num_cached, 0);
  EXPECT_EQ(pool.FindCached(42, 0, 0, toks), -1);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, RetainedBlockIsEvictableThenEvictedOnlyWhenNoneIsFree) {
  BlockPool pool(2, 4);
  auto a = *pool.Allocate(1);
  const auto toks = Tokens(7, 4);
  pool.RegisterCached(a[0], 42, 0, 0, toks, 0, /*retain=*/true);
  pool.Free(a);
  EXPECT_EQ(pool.stats().num_evictable, 1);
  EXPECT_EQ(pool.stats().num_free, 1);
  EXPECT_TRUE(pool.CanAllocate(2));
  auto b = *pool.Allocate(1);  // takes the free block, keeps the cached one
  EXPECT_NE(b[0], a[0]);
  EXPECT_EQ(pool.FindCached(42, 0, 0, toks), a[0]);
  EXPECT_EQ(pool.stats().num_evictions, 0);
  auto c = *pool.Allocate(1);  // must evict
  EXPECT_EQ(c[0], a[0]);
  EXPECT_EQ(pool.stats().num_evictions, 1);
  EXPECT_EQ(pool.FindCached(42, 0, 0, toks), -1);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, LookupComparesTokensParentAndSalt) {
  BlockPool pool(2, 4);
  auto a = *pool.Allocate(1);
  const auto toks = Tokens(7, 4);
  pool.RegisterCached(a[0], 42, 5, 6, toks, 0, true);
  EXPECT_EQ(pool.FindCached(42, 5, 6, toks), a[0]);
  EXPECT_EQ(pool.FindCached(42, 5, 6, Tokens(8, 4)), -1);  // same hash, other tokens
  EXPECT_EQ(pool.FindCached(42, 4, 6, toks), -1);
  EXPECT_EQ(pool.FindCached(42, 5, 7, toks), -1);
  EXPECT_EQ(pool.FindCached(43, 5, 6, toks), -1);
}

TEST(BlockPoolTest, DuplicateRegistrationKeepsTheFirst) {
  BlockPool pool(2, 4);
  auto a = *pool.Allocate(2);
  const auto toks = Tokens(0, 4);
  ASSERT_EQ(pool.RegisterCached(a[0], 42, 0, 0, toks, 0, true),
            BlockPool::RegisterResult::kRegistered);
  int32_t existing = -1;
  EXPECT_EQ(pool.RegisterCached(a[1], 42, 0, 0, toks, 1, true, &existing),
            BlockPool::RegisterResult::kDuplicate);
  EXPECT_EQ(existing, a[0]);
  EXPECT_FALSE(pool.is_cached(a[1]));
  pool.Free(a);
  EXPECT_EQ(pool.stats().num_evictable, 1);
  EXPECT_EQ(pool.stats().num_free, 1);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, FreeReleasesChainTailFirst) {
  BlockPool pool(3, 1, MakeLruEvictionPolicy());
  auto a = *pool.Allocate(3);
  for (int i = 0; i < 3; ++i) pool.RegisterCached(a[i], 100 + i, 0, 0, Tokens(i, 1), 0, true);
  pool.Free(a);
  // The tail (last block) is the least recently released, so it goes first.
  EXPECT_EQ((*pool.Allocate(1))[0], a[2]);
  EXPECT_EQ((*pool.Allocate(1))[0], a[1]);
  EXPECT_EQ((*pool.Allocate(1))[0], a[0]);
}

TEST(BlockPoolTest, Fragmentation) {
  const std::vector<int64_t> tokens = {1, 16, 17};
  const std::vector<int64_t> blocks = {1, 1, 2};
  EXPECT_DOUBLE_EQ(BlockPool::Fragmentation(tokens, blocks, 16), 30.0 / 64.0);
  EXPECT_DOUBLE_EQ(BlockPool::Fragmentation({}, {}, 16), 0.0);
  const std::vector<int64_t> full_t = {32}, full_b = {2};
  EXPECT_DOUBLE_EQ(BlockPool::Fragmentation(full_t, full_b, 16), 0.0);
}

}  // namespace
}  // namespace jisu
