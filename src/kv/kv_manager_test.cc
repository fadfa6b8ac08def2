// KvManager: allocation is all-or-nothing, rollback returns whole blocks only, only accepted
// full blocks reach the prefix cache (so a rollback never touches a cached block), and every
// reference comes back to the pool.
#include "kv/kv_manager.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace jisu {
namespace {

std::vector<int32_t> Tokens(int32_t n, int32_t first = 1) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = first + i;
  return v;
}

TEST(KvManager, AllocateIsAllOrNothingAndQueryBeforeCommit) {
  BlockPool pool(8, 4);
  KvManager kv(&pool, nullptr);
  const auto tokens = Tokens(30);
  EXPECT_EQ(kv.Admit(1, {}, tokens), 0);
  EXPECT_TRUE(kv.Tracks(1));
  EXPECT_EQ(kv.BlocksNeeded(1, 10), 3);
  ASSERT_TRUE(kv.Allocate(1, 10));
  EXPECT_EQ(kv.num_blocks(1), 3);
  EXPECT_EQ(kv.BlocksNeeded(1, 12), 0);  // the third block covers up to 12
  EXPECT_TRUE(kv.Allocate(1, 12));
  EXPECT_EQ(pool.num_free(), 5);
  EXPECT_EQ(kv.MaxAllocatableTokens(1), 32);  // 3 held + 5 free blocks of 4
  // 33 tokens need 9 blocks: more than the pool has. Nothing changes.
  EXPECT_FALSE(kv.CanAllocate(1, 33));
  const std::vector<int32_t> before(kv.block_table(1).begin(), kv.block_table(1).end());
  EXPECT_FALSE(kv.Allocate(1, 33));
  EXPECT_EQ(std::vector<int32_t>(kv.block_table(1).begin(), kv.block_table(1).end()), before);
  EXPECT_EQ(pool.num_free(), 5);
  EXPECT_TRUE(kv.CanAllocate(1, 32));
  ASSERT_TRUE(kv.Allocate(1, 32));
  EXPECT_EQ(pool.num_free(), 0);
  EXPECT_TRUE(kv.CheckInvariants().ok());
  kv.Free(1);
  EXPECT_FALSE(kv.Tracks(1));
  EXPECT_EQ(pool.num_free(), 8);
  kv.Free(1);  // untracked: no-op
  EXPECT_TRUE(kv.CheckInvariants().ok());
}

TEST(KvManager, TruncateGivesBackWholeBlocksOnly) {
  BlockPool pool(16, 4);
  KvManager kv(&pool, nullptr);
  kv.Admit(1, {}, Tokens(20));
  ASSERT_TRUE(kv.Allocate(1, 18));  // 5 blocks
  const std::vector<int32_t> table(kv.block_table(1).begin(), kv.block_table(1).end());
  kv.Truncate(1, 9);  // positions 0..8: the block of 8..11 is partly kept and stays
  EXPECT_EQ(kv.num_blocks(1), 3);
  EXPECT_EQ(std::vector<int32_t>(kv.block_table(1).begin(), kv.block_table(1).end()),
            std::vector<int32_t>(table.begin(), table.begin() + 3));
  EXPECT_EQ(pool.ref_count(table[3]), 0);
  EXPECT_EQ(pool.ref_count(table[4]), 0);
  EXPECT_EQ(pool.num_free(), 13);
  kv.Truncate(1, 12);  // nothing past 12 is held: no-op
  EXPECT_EQ(kv.num_blocks(1), 3);
  kv.Truncate(1, 0);
  EXPECT_EQ(kv.num_blocks(1), 0);
  EXPECT_EQ(pool.num_free(), 16);
  EXPECT_TRUE(kv.CheckInvariants().ok());
  kv.Free(1);
}

TEST(KvManager, CommitsOnlyAcceptedFullBlocks) {
  BlockPool pool(16, 4);
  PrefixCache cache(&pool, PrefixCacheMode::kFull);
  KvManager kv(&pool, &cache);
  std::vector<int32_t> tokens = Tokens(10);
  EXPECT_EQ(kv.Admit(1, {}, tokens), 0);
  // The step fed 10 tokens + 5 drafts (positions up to 14); only 7 are accepted.
  ASSERT_TRUE(kv.Allocate(1, 15));
  kv.Commit(1, tokens, 7);
  EXPECT_EQ(kv.num_committed_blocks(1), 1);
  const std::vector<int32_t> table(kv.block_table(1).begin(), kv.block_table(1).end());
  EXPECT_TRUE(pool.is_cached(table[0]));
  for (size_t b = 1; b < table.size(); ++b) EXPECT_FALSE(pool.is_cached(table[b])) << b;
  EXPECT_EQ(cache.stats().commits, 1);
  EXPECT_NE(kv.parent_hash(1), kRootBlockHash);
  kv.Truncate(1, 8);  // rollback to the accepted length (+1 pending): blocks 2, 3 go back
  EXPECT_EQ(kv.num_blocks(1), 2);
  // Later steps accept more: the chain continues from the committed block.
  tokens = Tokens(13);
  ASSERT_TRUE(kv.Allocate(1, 13));
  kv.Commit(1, tokens, 12);
  EXPECT_EQ(kv.num_committed_blocks(1), 3);
  EXPECT_EQ(cache.stats().commits, 3);
  EXPECT_TRUE(kv.CheckInvariants().ok());
  kv.Free(1);
  // Every block came back; the three committed ones stay cached (full mode), evictable.
  const BlockPoolStats s = pool.stats();
  EXPECT_EQ(s.num_in_use, 0);
  EXPECT_EQ(s.num_evictable, 3);
  EXPECT_EQ(s.num_free, 13);

  // A new sequence with the same tokens hits exactly the committed chain.
  EXPECT_EQ(kv.Admit(2, {}, Tokens(14)), 12);
  EXPECT_EQ(kv.num_committed_blocks(2), 3);
  EXPECT_EQ(pool.stats().num_in_use, 3);
  // ... but not under another salt.
  KvSeqInfo salted;
  salted.cache_salt = "other";
  EXPECT_EQ(kv.Admit(3, salted, Tokens(14)), 0);
  EXPECT_TRUE(kv.CheckInvariants().ok());
  kv.Free(2);
  kv.Free(3);
  EXPECT_EQ(pool.stats().num_in_use, 0);
}

// K/V computed under other options (another matmul path: other activation rounding) is never
// a hit, also when the key and the salt together spell the same bytes; equal keys hit.
TEST(KvManager, OptionKeysSeparateCachedChains) {
  BlockPool pool(32, 4);
  PrefixCache cache(&pool, PrefixCacheMode::kFull);
  KvManager kv(&pool, &cache);
  const auto tokens = Tokens(14);
  KvSeqInfo int8;
  int8.kv_key = "w=;m=int8;a=dense";
  ASSERT_EQ(kv.Admit(1, int8, tokens), 0);
  ASSERT_TRUE(kv.Allocate(1, 14));
  kv.Commit(1, tokens, 14);
  kv.Free(1);
  KvSeqInfo float_path;
  float_path.kv_key = "w=;m=float;a=dense";
  EXPECT_EQ(kv.Admit(2, float_path, tokens), 0);
  KvSeqInfo spelled;  // the same bytes, split between salt and key
  spelled.kv_key = "w=;m=int8";
  spelled.cache_salt = ";a=dense";
  EXPECT_EQ(kv.Admit(3, spelled, tokens), 0);
  EXPECT_EQ(kv.Admit(4, int8, tokens), 12);
  EXPECT_TRUE(kv.CheckInvariants().ok());
  for (KvSeqId id : {2, 3, 4}) kv.Free(id);
  EXPECT_EQ(pool.stats().num_in_use, 0);
}

TEST(KvManager, SharedPrefixBlocksAreKeptInSharedMode) {
  BlockPool pool(16, 4);
  PrefixCache cache(&pool, PrefixCacheMode::kShared);
  KvManager kv(&pool, &cache);
  const auto tokens = Tokens(13);
  KvSeqInfo info;
  info.tenant = 2;
  info.num_shared_prefix_tokens = 9;  // blocks 0 and 1 are system content, block 2 is not
  kv.Admit(1, info, tokens);
  ASSERT_TRUE(kv.Allocate(1, 13));
  kv.Commit(1, tokens, 12);
  EXPECT_EQ(kv.num_committed_blocks(1), 3);
  kv.Free(1);
  EXPECT_EQ(pool.stats().num_evictable, 2);  // the private block was not kept
  info.tenant = 3;
  EXPECT_EQ(kv.Admit(2, info, tokens), 8);
  EXPECT_EQ(cache.tenant_stats(3).hit_tokens, 8);
  kv.Free(2);
  EXPECT_TRUE(kv.CheckInvariants().ok());
}

TEST(KvManager, InvariantsSeeForeignReferences) {
  BlockPool pool(8, 4);
  KvManager kv(&pool, nullptr);
  kv.Admit(1, {}, Tokens(5));
  ASSERT_TRUE(kv.Allocate(1, 5));
  EXPECT_TRUE(kv.CheckInvariants().ok());
  auto foreign = pool.Allocate(1);  // a reference no table holds
  ASSERT_TRUE(foreign.has_value());
  EXPECT_FALSE(kv.CheckInvariants(/*sole_client=*/true).ok());
  EXPECT_TRUE(kv.CheckInvariants(/*sole_client=*/false).ok());
  pool.Free(*foreign);
  kv.Free(1);
}

// Random admissions, growth, speculative windows with random accept counts, rollbacks and
// frees over several sequences sharing prefixes: invariants hold after every operation, only
// accepted blocks are ever cached, and the pool ends where it started.
TEST(KvManager, RandomSpeculativeWindowsLeakNothing) {
  for (PrefixCacheMode mode :
       {PrefixCacheMode::kOff, PrefixCacheMode::kShared, PrefixCacheMode::kFull}) {
    BlockPool pool(40, 4);
    PrefixCache cache(&pool, mode);
    KvManager kv(&pool, &cache);
    std::mt19937 rng(17 + static_cast<int>(mode));
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    struct Seq {
      std::vector<int32_t> tokens;
      int64_t computed = 0;
    };
    std::map<KvSeqId, Seq> seqs;
    KvSeqId next = 0;
    int64_t windows = 0;
    for (int op = 0; op < 3000; ++op) {
      const int what = uniform(0, 9);
      if (what == 0 || seqs.empty()) {
        Seq s;
        s.tokens = Tokens(uniform(2, 12), 100 * uniform(0, 2));  // three shared prefixes
        for (int i = uniform(0, 6); i > 0; --i) s.tokens.push_back(uniform(0, 999));
        s.computed = kv.Admit(next, {}, s.tokens);
        ASSERT_LT(s.computed, static_cast<int64_t>(s.tokens.size()));
        if (!kv.Allocate(next, static_cast<int64_t>(s.tokens.size()))) {
          kv.Free(next);
        } else {
          // The prompt's KV is computed in one go.
          s.computed = static_cast<int64_t>(s.tokens.size()) - 1;
          kv.Commit(next, s.tokens, s.computed);
          seqs[next] = s;
        }
        ++next;
      } else if (what == 1) {
        auto it = std::next(seqs.begin(), uniform(0, static_cast<int>(seqs.size()) - 1));
        kv.Free(it->first);
        seqs.erase(it);
      } else {
        // A speculative window: the pending token plus k drafts, then 1..k+1 accepted.
        auto it = std::next(seqs.begin(), uniform(0, static_cast<int>(seqs.size()) - 1));
        Seq& s = it->second;
        const int64_t n = static_cast<int64_t>(s.tokens.size());
        int64_t k = uniform(0, 8);
        k = std::min<int64_t>(k, kv.MaxAllocatableTokens(it->first) - n);
        if (k < 0 || n + k + 1 > 120) continue;
        ASSERT_TRUE(kv.Allocate(it->first, n + k));
        const int64_t accepted = uniform(1, static_cast<int>(k) + 1);
        for (int64_t i = 0; i < accepted; ++i) s.tokens.push_back(uniform(0, 999));
        s.computed = n + accepted - 1;  // the fed token and accepted - 1 drafts
        kv.Commit(it->first, s.tokens, s.computed);
        kv.Truncate(it->first, static_cast<int64_t>(s.tokens.size()));
        ++windows;
        ASSERT_EQ(kv.num_committed_blocks(it->first), s.computed / 4);
        ASSERT_LE(kv.num_blocks(it->first), (static_cast<int64_t>(s.tokens.size()) + 3) / 4);
        // Blocks past the committed ones are never cached: rollback cannot hit a cached block.
        const auto table = kv.block_table(it->first);
        for (size_t b = static_cast<size_t>(s.computed / 4); b < table.size(); ++b) {
          ASSERT_FALSE(pool.is_cached(table[b])) << "block " << b;
        }
      }
      const Status inv = kv.CheckInvariants();
      ASSERT_TRUE(inv.ok()) << inv.ToString();
    }
    EXPECT_GT(windows, 1000);
    for (const auto& [id, s] : seqs) kv.Free(id);
    EXPECT_EQ(kv.num_sequences(), 0);
    const BlockPoolStats st = pool.stats();
    EXPECT_EQ(st.num_in_use, 0);
    EXPECT_EQ(st.num_free + st.num_evictable, 40);
    for (int32_t b = 0; b < pool.num_blocks(); ++b) EXPECT_EQ(pool.ref_count(b), 0);
    if (mode == PrefixCacheMode::kOff) {
      EXPECT_EQ(st.num_free, 40);
    }
    EXPECT_TRUE(pool.CheckInvariants().ok());
  }
}

}  // namespace
}  // namespace jisu
