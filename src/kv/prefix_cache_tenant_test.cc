// Per-tenant accounting of the prefix cache: cached blocks owned by each tenant alone, blocks
// shared by several (kMultiTenant), and per-tenant hit rates; kept exact through sharing and
// eviction.
#include <gtest/gtest.h>

#include <vector>

#include "kv/kv_cache.h"
#include "kv/prefix_cache.h"

namespace jisu {
namespace {

constexpr int32_t kBs = 4;

std::vector<int32_t> Range(int32_t first, int32_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = first + i;
  return t;
}

// Looks up, allocates the rest and commits every full block (as the scheduler does); returns
// the block table.
std::vector<int32_t> Prefill(BlockPool& pool, PrefixCache& cache,
                             const std::vector<int32_t>& tokens, TenantId tenant) {
  uint64_t parent = kRootBlockHash;
  std::vector<int32_t> table = cache.FindCachedPrefix(tokens, "", tenant, &parent);
  const size_t hit = table.size();
  EXPECT_TRUE(pool.AllocateInto(
      BlocksForTokens(static_cast<int64_t>(tokens.size()), kBs) - static_cast<int64_t>(hit),
      &table));
  for (size_t i = hit; i < tokens.size() / kBs; ++i) {
    parent = cache.CommitFullBlock(table[i], parent,
                                   std::span<const int32_t>(tokens).subspan(i * kBs, kBs), "",
                                   tenant, BlockKind::kPrivate);
  }
  return table;
}

TEST(PrefixCacheTenantTest, CachedBlocksAndHitRatesPerTenant) {
  BlockPool pool(24, kBs);
  PrefixCache cache(&pool, PrefixCacheMode::kFull);
  const auto a = Range(1, 4 * kBs + 1);    // tenant 0: 4 full blocks
  const auto b = Range(100, 2 * kBs + 1);  // tenant 1: 2 full blocks
  pool.Free(Prefill(pool, cache, a, 0));
  pool.Free(Prefill(pool, cache, b, 1));
  EXPECT_EQ(cache.tenant_report(0).cached_blocks, 4);
  EXPECT_EQ(cache.tenant_report(1).cached_blocks, 2);
  EXPECT_EQ(cache.tenant_report(kMultiTenant).cached_blocks, 0);
  EXPECT_EQ(cache.tenant_report(7).cached_blocks, 0);  // never seen

  // Tenant 2 reuses the first 2 blocks of a: those become multi-tenant.
  auto c_prompt = Range(1, 2 * kBs);
  c_prompt.push_back(999);
  c_prompt.push_back(998);
  pool.Free(Prefill(pool, cache, c_prompt, 2));
  EXPECT_EQ(cache.tenant_report(0).cached_blocks, 2);
  EXPECT_EQ(cache.tenant_report(kMultiTenant).cached_blocks, 2);
  EXPECT_EQ(cache.tenant_report(2).cached_blocks, 0);  // its tail is a partial block
  EXPECT_EQ(cache.tenant_report(2).hits.query_tokens, 10);
  EXPECT_EQ(cache.tenant_report(2).hits.hit_tokens, 8);
  EXPECT_DOUBLE_EQ(cache.tenant_report(2).hits.HitRate(), 0.8);
  EXPECT_DOUBLE_EQ(cache.tenant_report(0).hits.HitRate(), 0.0);
  const std::vector<TenantPrefixStats> all = cache.tenant_reports();
  ASSERT_EQ(all.size(), 3u);
  int64_t sum = cache.tenant_report(kMultiTenant).cached_blocks;
  for (const TenantPrefixStats& t : all) sum += t.cached_blocks;
  EXPECT_EQ(sum, pool.stats().num_cached);
  EXPECT_TRUE(pool.CheckInvariants().ok());

  // A flood from tenant 3 evicts: counts follow (the fair policy takes tenant 0's and 1's
  // single-tenant blocks before the multi-tenant ones), and stay consistent.
  for (int i = 0; i < 8; ++i) pool.Free(Prefill(pool, cache, Range(1000 + 100 * i, 4 * kBs), 3));
  EXPECT_GT(pool.stats().num_evictions, 0);
  sum = cache.tenant_report(kMultiTenant).cached_blocks;
  for (const TenantPrefixStats& t : cache.tenant_reports()) sum += t.cached_blocks;
  EXPECT_EQ(sum, pool.stats().num_cached);
  EXPECT_EQ(cache.tenant_report(kMultiTenant).cached_blocks, 2);
  const Status inv = pool.CheckInvariants();
  EXPECT_TRUE(inv.ok()) << inv.ToString();
}

}  // namespace
}  // namespace jisu
