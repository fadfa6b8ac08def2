#include "kv/prefix_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kv/kv_cache.h"

namespace jisu {
namespace {

constexpr int32_t kBlockSize = 4;

std::vector<int32_t> Range(int32_t first, int32_t n) {
  std::vector<int32_t> t(n);
  for (int32_t i = 0; i < n; ++i) t[i] = first + i;
  return t;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// What the scheduler does for one prompt: reuse the cached prefix, allocate the rest, "compute"
// it, commit every full block. `num_shared_blocks` leading blocks are system-prompt blocks.
struct Seq {
  std::vector<int32_t> table;
  int64_t num_cached_tokens = 0;
};

Seq Prefill(BlockPool& pool, PrefixCache& cache, const std::vector<int32_t>& tokens,
            TenantId tenant, std::string_view salt = "", int64_t num_shared_blocks = 0) {
  Seq seq;
  uint64_t parent = kRootBlockHash;
  seq.table = cache.FindCachedPrefix(tokens, salt, tenant, &parent);
  seq.num_cached_tokens = static_cast<int64_t>(seq.table.size()) * kBlockSize;
  const int64_t need = BlocksForTokens(static_cast<int64_t>(tokens.size()), kBlockSize) -
                       static_cast<int64_t>(seq.table.size());
  EXPECT_TRUE(pool.AllocateInto(need, &seq.table)) << "pool exhausted";
  const size_t num_full = tokens.size() / kBlockSize;
  for (size_t i = seq.num_cached_tokens / kBlockSize; i < num_full && i < seq.table.size(); ++i) {
    const auto kind =
        static_cast<int64_t>(i) < num_shared_blocks ? BlockKind::kShared : BlockKind::kPrivate;
    parent = cache.CommitFullBlock(
        seq.table[i], parent, std::span<const int32_t>(tokens).subspan(i * kBlockSize, kBlockSize),
        salt, tenant, kind);
  }
  return seq;
}

TEST(PrefixCacheTest, ParsesMode) {
  EXPECT_EQ(*ParsePrefixCacheMode("shared"), PrefixCacheMode::kShared);
  EXPECT_EQ(*ParsePrefixCacheMode("full"), PrefixCacheMode::kFull);
  EXPECT_EQ(*ParsePrefixCacheMode("off"), PrefixCacheMode::kOff);
  EXPECT_FALSE(ParsePrefixCacheMode("on").ok());
}

TEST(PrefixCacheTest, HashChainsOverParentTokensAndSalt) {
  const auto x = Range(10, kBlockSize);
  const uint64_t salt = HashCacheSalt("");
  const uint64_t h1 = HashBlockTokens(kRootBlockHash, x, salt);
  EXPECT_NE(h1, HashBlockTokens(1, x, salt));
  EXPECT_NE(h1, HashBlockTokens(kRootBlockHash, x, HashCacheSalt("a")));
  EXPECT_NE(HashCacheSalt("a"), HashCacheSalt("b"));
  auto swapped = x;
  std::swap(swapped[0], swapped[1]);
  EXPECT_NE(h1, HashBlockTokens(kRootBlockHash, swapped, salt));
  EXPECT_EQ(h1, HashBlockTokens(kRootBlockHash, Range(10, kBlockSize), salt));
}

TEST(PrefixCacheTest, SequencesSharingASystemPromptReuseItsBlocks) {
  BlockPool pool(32, kBlockSize);
  PrefixCache cache(&pool, PrefixCacheMode::kShared);
  const auto system = Range(1000, 2 * kBlockSize);
  Seq a = Prefill(pool, cache, Concat(system, Range(1, 5)), 0, "", 2);
  Seq b = Prefill(pool, cache, Concat(system, Range(50, 7)), 1, "", 2);
  EXPECT_EQ(b.num_cached_tokens, 2 * kBlockSize);
  ASSERT_GE(b.table.size(), 2u);
  EXPECT_EQ(b.table[0], a.table[0]);
  EXPECT_EQ(b.table[1], a.table[1]);
  EXPECT_NE(b.table[2], a.table[2]);  // the user parts differ
  EXPECT_EQ(pool.ref_count(a.table[0]), 2);
  EXPECT_EQ(pool.ref_count(a.table[2]), 1);
  const PrefixCacheStats s = cache.stats();
  EXPECT_EQ(s.lookups, 2);
  EXPECT_EQ(s.total.query_tokens, 13 + 15);
  EXPECT_EQ(s.total.hit_tokens, 8);
  EXPECT_DOUBLE_EQ(s.total.HitRate(), 8.0 / 28.0);
  EXPECT_EQ(cache.tenant_stats(0).hit_tokens, 0);
  EXPECT_EQ(cache.tenant_stats(1).hit_tokens, 8);
  EXPECT_EQ(cache.tenant_stats(1).query_tokens, 15);
  EXPECT_EQ(cache.tenant_stats(7).query_tokens, 0);
  pool.Free(a.table);
  pool.Free(b.table);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(PrefixCacheTest, PartialTailBlocksAreNotCachedAndOneTokenIsLeft) {
  BlockPool pool(16, kBlockSize);
  PrefixCache cache(&pool, PrefixCacheMode::kFull);
  Seq a = Prefill(pool, cache, Range(0, 6), 0);  // one full block + 2-token tail
  EXPECT_EQ(cache.stats().commits, 1);
  EXPECT_TRUE(pool.is_cached(a.table[0]));
  EXPECT_FALSE(pool.is_cached(a.table[1]));
  pool.Free(a.table);
  // Exactly one block of tokens: nothing may be returned (the last token must be computed).
  EXPECT_TRUE(cache.FindCachedPrefix(Range(0, 4), "", 0).empty());
  auto hit = cache.FindCachedPrefix(Range(0, 5), "", 0);
  EXPECT_EQ(hit.size(), 1u);
  pool.Free(hit);
  // The partial tail [4, 5] was never cached, so an 8+1-token query hits one block only.
  hit = cache.FindCachedPrefix(Range(0, 9), "", 0);
  EXPECT_EQ(hit.size(), 1u);
  pool.Free(hit);
}

TEST(PrefixCacheTest, DifferentSaltsNeverShare) {
  BlockPool pool(16, kBlockSize);
  PrefixCache cache(&pool, PrefixCacheMode::kFull);
  const auto prompt = Range(0, 9);
  Seq a = Prefill(pool, cache, prompt, 0, "salt-a");
  EXPECT_TRUE(cache.FindCachedPrefix(prompt, "salt-b", 0).empty());
  EXPECT_TRUE(cache.FindCachedPrefix(prompt, "", 0).empty());
  auto hit = cache.FindCachedPrefix(prompt, "salt-a", 1);
  EXPECT_EQ(hit.size(), 2u);
  pool.Free(hit);
  pool.Free(a.table);
}

TEST(PrefixCacheTest, SameBlockAfterDifferentPrefixesIsADifferentBlock) {
  BlockPool pool(16, kBlockSize);
  PrefixCache cache(&pool, PrefixCacheMode::kFull);
  const auto p1 = Range(0, kBlockSize), p2 = Range(100, kBlockSize), x = Range(500, kBlockSize);
  Seq a = Prefill(pool, cache, Concat(Concat(p1, x), {1}), 0);
  Seq b = Prefill(pool, cache, Concat(Concat(p2, x), {1}), 0);
  EXPECT_EQ(b.num_cached_tokens, 0);  // p2 is new, so x after it is new too
  EXPECT_NE(a.table[1], b.table[1]);
  EXPECT_EQ(cache.stats().commits, 4);
  EXPECT_EQ(cache.stats().duplicate_commits, 0);
  pool.Free(a.table);
  pool.Free(b.table);
}

TEST(PrefixCacheTest, EvictableBlockIsRevivedByAHit) {
  BlockPool pool(8, kBlockSize);
  PrefixCache cache(&pool, PrefixCacheMode::kFull);
  const auto prompt = Range(0, 9);
  Seq a = Prefill(pool, cache, prompt, 0);
  pool.Free(a.table);
  EXPECT_EQ(pool.stats().num_evictable, 2);
  EXPECT_EQ(pool.stats().num_free, 6);
  auto hit = cache.FindCachedPrefix(prompt, "", 0);
  ASSERT_EQ(hit.size(), 2u);
  EXPECT_EQ(hit[0], a.table[0]);
  EXPECT_EQ(hit[1], a.table[1]);
  EXPECT_EQ(pool.ref_count(hit[0]), 1);
  EXPECT_EQ(pool.stats().num_evictable, 0);
  EXPECT_EQ(pool.stats().num_in_use, 2);
  pool.Free(hit);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(PrefixCacheTest, EvictsLeastRecentlyUsedFirst) {
  BlockPool pool(6, kBlockSize, MakeLruEvictionPolicy());
  PrefixCache cache(&pool, PrefixCacheMode::kFull);
  // Three one-block prompts, released in order 0, 1, 2; then prompt 0 is hit again.
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 3; ++i) prompts.push_back(Range(100 * i, kBlockSize + 1));
  for (const auto& p : prompts) pool.Free(Prefill(pool, cache, p, 0).table);
  pool.Free(cache.FindCachedPrefix(prompts[0], "", 0));
  // The 3 free blocks go first, then prompt 1's block (LRU), then prompt 2's.
  ASSERT_TRUE(pool.Allocate(4).has_value());
  EXPECT_TRUE(cache.FindCachedPrefix(prompts[1], "", 0).empty());
  auto hit2 = cache.FindCachedPrefix(prompts[2], "", 0);
  auto hit0 = cache.FindCachedPrefix(prompts[0], "", 0);
  EXPECT_EQ(hit2.size(), 1u);
  EXPECT_EQ(hit0.size(), 1u);
  EXPECT_EQ(pool.stats().num_evictions, 1);
}

// Tenant A warms a prefix; tenant B floods the pool with distinct prompts. Returns whether A's
// prefix is still fully cached afterwards.
bool WarmPrefixSurvivesFlood(std::unique_ptr<EvictionPolicy> policy) {
  BlockPool pool(64, kBlockSize, std::move(policy));
  PrefixCache cache(&pool, PrefixCacheMode::kFull);
  const TenantId kA = 0, kB = 1;
  const auto a_prompt = Range(100000, 4 * kBlockSize + 1);  // 4 cacheable blocks
  pool.Free(Prefill(pool, cache, a_prompt, kA).table);
  // B: 200 distinct prompts of 5 blocks each, 1000 blocks in all, ~15x the pool.
  for (int i = 0; i < 200; ++i) {
    Seq s = Prefill(pool, cache, Range(i * 1000, 5 * kBlockSize), kB);
    pool.Free(s.table);
  }
  EXPECT_GT(pool.stats().num_evictions, 900);
  auto hit = cache.FindCachedPrefix(a_prompt, "", kA);
  pool.Free(hit);
  EXPECT_TRUE(pool.CheckInvariants().ok());
  return hit.size() == 4;
}

TEST(PrefixCacheTest, TenantIsolationKeepsAWarmPrefixThroughAFlood) {
  EXPECT_TRUE(WarmPrefixSurvivesFlood(MakeTenantFairEvictionPolicy()));
  // Plain LRU flushes it: this is what the tenant-fair policy prevents.
  EXPECT_FALSE(WarmPrefixSurvivesFlood(MakeLruEvictionPolicy()));
}

TEST(PrefixCacheTest, MultiTenantBlocksAreEvictedLast) {
  BlockPool pool(8, kBlockSize);
  PrefixCache cache(&pool, PrefixCacheMode::kFull);
  const auto shared = Range(5000, kBlockSize + 1);
  pool.Free(Prefill(pool, cache, shared, 0).table);
  pool.Free(cache.FindCachedPrefix(shared, "", 1));  // now used by tenants 0 and 1
  // Tenant 2 fills everything else many times over.
  for (int i = 0; i < 20; ++i)
    pool.Free(Prefill(pool, cache, Range(i * 100, 3 * kBlockSize), 2).table);
  auto hit = cache.FindCachedPrefix(shared, "", 2);
  EXPECT_EQ(hit.size(), 1u);
  pool.Free(hit);
}

TEST(PrefixCacheTest, SharedModeKeepsSystemAndCrossTenantBlocksOnly) {
  BlockPool pool(32, kBlockSize);
  PrefixCache cache(&pool, PrefixCacheMode::kShared);
  const auto system = Range(9000, kBlockSize);
  const auto history = Range(1, 2 * kBlockSize);
  const auto prompt = Concat(Concat(system, history), {77});
  pool.Free(Prefill(pool, cache, prompt, 0, "", /*num_shared_blocks=*/1).table);
  // Only the system block stays; tenant 0's private history is dropped at release.
  EXPECT_EQ(pool.stats().num_evictable, 1);
  EXPECT_EQ(pool.stats().num_cached, 1);
  auto hit = cache.FindCachedPrefix(prompt, "", 0);
  EXPECT_EQ(hit.size(), 1u);
  pool.Free(hit);

  // The same private blocks computed again by another tenant: reused across tenants -> kept.
  pool.Free(Prefill(pool, cache, prompt, 1, "", 1).table);
  hit = cache.FindCachedPrefix(prompt, "", 2);
  EXPECT_EQ(hit.size(), 3u);
  pool.Free(hit);

  // A private block hit by another tenant while still in use is kept too.
  const auto other = Concat(Range(300, 2 * kBlockSize), {5});
  Seq a = Prefill(pool, cache, other, 3);
  auto live_hit = cache.FindCachedPrefix(other, "", 4);
  EXPECT_EQ(live_hit.size(), 2u);
  pool.Free(live_hit);
  pool.Free(a.table);
  hit = cache.FindCachedPrefix(other, "", 3);
  EXPECT_EQ(hit.size(), 2u);
  pool.Free(hit);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(PrefixCacheTest, FullModeKeepsPrivateHistory) {
  BlockPool pool(32, kBlockSize);
  PrefixCache cache(&pool, PrefixCacheMode::kFull);
  const auto prompt = Range(1, 3 * kBlockSize + 1);
  pool.Free(Prefill(pool, cache, prompt, 0).table);
  EXPECT_EQ(pool.stats().num_evictable, 3);
  auto hit = cache.FindCachedPrefix(prompt, "", 0);
  EXPECT_EQ(hit.size(), 3u);
  pool.Free(hit);
}

TEST(PrefixCacheTest, OffModeCachesNothing) {
  BlockPool pool(32, kBlockSize);
  PrefixCache cache(&pool, PrefixCacheMode::kOff);
  const auto prompt = Range(1, 3 * kBlockSize + 1);
  Seq a = Prefill(pool, cache, prompt, 0, "", 3);
  EXPECT_EQ(pool.stats().num_cached, 0);
  EXPECT_TRUE(cache.FindCachedPrefix(prompt, "", 0).empty());
  pool.Free(a.table);
  EXPECT_EQ(pool.stats().num_free, 32);
  EXPECT_EQ(cache.stats().total.query_tokens, 2 * 13);
  EXPECT_EQ(cache.stats().total.hit_tokens, 0);
}

TEST(PrefixCacheTest, DuplicateCommitLeavesTheSecondCopyPrivate) {
  BlockPool pool(16, kBlockSize);
  PrefixCache cache(&pool, PrefixCacheMode::kFull);
  const auto prompt = Range(1, 2 * kBlockSize + 1);
  // Both sequences start before either commits, so both compute the same blocks.
  uint64_t pa = kRootBlockHash, pb = kRootBlockHash;
  auto a = *pool.Allocate(3);
  auto b = *pool.Allocate(3);
  for (int i = 0; i < 2; ++i) {
    const auto blk = std::span<const int32_t>(prompt).subspan(i * kBlockSize, kBlockSize);
    pa = cache.CommitFullBlock(a[i], pa, blk, "", 0, BlockKind::kPrivate);
    pb = cache.CommitFullBlock(b[i], pb, blk, "", 1, BlockKind::kPrivate);
  }
  EXPECT_EQ(pa, pb);
  EXPECT_EQ(cache.stats().commits, 2);
  EXPECT_EQ(cache.stats().duplicate_commits, 2);
  EXPECT_FALSE(pool.is_cached(b[0]));
  pool.Free(b);
  EXPECT_EQ(pool.stats().num_free, 16 - 3);
  pool.Free(a);
  EXPECT_EQ(pool.stats().num_evictable, 2);
  auto hit = cache.FindCachedPrefix(prompt, "", 1);
  EXPECT_EQ(hit, (std::vector<int32_t>{a[0], a[1]}));
  pool.Free(hit);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

// Randomized: sequences of several tenants come and go over a small pool with few distinct
// prefixes. A simple model tracks what each block holds (the full token prefix its KV encodes,
// written when a sequence computes it) and the expected ref counts.
class PrefixCacheStressTest : public ::testing::TestWithParam<PrefixCacheMode> {};

TEST_P(PrefixCacheStressTest, MatchesModel) {
  for (int policy_kind = 0; policy_kind < 2; ++policy_kind) {
    BlockPool pool(48, kBlockSize,
                   policy_kind ? MakeLruEvictionPolicy() : MakeTenantFairEvictionPolicy());
    PrefixCache cache(&pool, GetParam());
    std::mt19937 rng(1234 + policy_kind);
    std::vector<std::vector<int32_t>> contents(pool.num_blocks());  // block -> prefix it encodes
    struct Live {
      std::vector<int32_t> table;
    };
    std::vector<Live> live;
    int64_t total_hits = 0;
    for (int step = 0; step < 3000; ++step) {
      if (live.empty() || rng() % 3 != 0) {
        // New prompt: a few system prompts (tokens 0..3 with block-level variation) + random tail.
        std::vector<int32_t> tokens;
        const int sys = rng() % 3;
        for (int i = 0; i < static_cast<int>(rng() % 4) * kBlockSize; ++i) tokens.push_back(sys);
        const int tail = 1 + rng() % 10;
        for (int i = 0; i < tail; ++i) tokens.push_back(rng() % 2);
        const TenantId tenant = rng() % 4;
        const std::string salt = rng() % 5 == 0 ? "s" : "";
        const int64_t need = BlocksForTokens(static_cast<int64_t>(tokens.size()), kBlockSize);
        uint64_t parent = kRootBlockHash;
        std::vector<int32_t> table = cache.FindCachedPrefix(tokens, salt, tenant, &parent);
        ASSERT_LE(table.size() * kBlockSize, tokens.size() - 1);
        for (size_t i = 0; i < table.size(); ++i) {
          // Exactness: the block holds the KV of exactly this prefix (under this salt).
          const std::vector<int32_t> want(tokens.begin(), tokens.begin() + (i + 1) * kBlockSize);
          auto got = contents[table[i]];
          ASSERT_FALSE(got.empty());
          const int32_t got_salt = got.back();
          got.pop_back();
          ASSERT_EQ(got, want) << "step " << step;
          ASSERT_EQ(got_salt, salt.empty() ? 0 : 1);
        }
        total_hits += static_cast<int64_t>(table.size());
        const size_t first_new = table.size();
        if (!pool.AllocateInto(need - static_cast<int64_t>(first_new), &table)) {
          ASSERT_FALSE(pool.CanAllocate(need - static_cast<int64_t>(first_new)));
          pool.Free(table);
        } else {
          for (size_t i = first_new; i < table.size(); ++i) {
            const size_t end = std::min(tokens.size(), (i + 1) * kBlockSize);
            contents[table[i]].assign(tokens.begin(), tokens.begin() + end);
            contents[table[i]].push_back(salt.empty() ? 0 : 1);
            if (end == (i + 1) * kBlockSize) {
              parent = cache.CommitFullBlock(
                  table[i], parent,
                  std::span<const int32_t>(tokens).subspan(i * kBlockSize, kBlockSize), salt,
                  tenant, rng() % 2 ? BlockKind::kShared : BlockKind::kPrivate);
            }
          }
          live.push_back({std::move(table)});
        }
      } else {
        const size_t victim = rng() % live.size();
        pool.Free(live[victim].table);
        live.erase(live.begin() + victim);
      }
      // Invariants: refs equal the number of live tables holding a block; states consistent.
      std::vector<int32_t> refs(pool.num_blocks(), 0);
      for (const Live& l : live) {
        for (int32_t b : l.table) ++refs[b];
      }
      for (int32_t b = 0; b < pool.num_blocks(); ++b) {
        ASSERT_EQ(pool.ref_count(b), refs[b]) << "block " << b << " step " << step;
      }
      ASSERT_TRUE(pool.CheckInvariants().ok()) << pool.CheckInvariants().ToString();
    }
    for (const Live& l : live) pool.Free(l.table);
    EXPECT_EQ(pool.stats().num_in_use, 0);
    EXPECT_TRUE(pool.CheckInvariants().ok());
    if (GetParam() == PrefixCacheMode::kOff) {
      EXPECT_EQ(total_hits, 0);
    } else {
      EXPECT_GT(total_hits, 100);  // the workload does exercise the cache
      EXPECT_GT(pool.stats().num_evictions, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PrefixCacheStressTest,
                         ::testing::Values(PrefixCacheMode::kOff, PrefixCacheMode::kShared,
                                           PrefixCacheMode::kFull));

}  // namespace
}  // namespace jisu
