// Micro-benchmark, not a test: run by hand with
//   ./build/jisu_tests --gtest_also_run_disabled_tests --gtest_filter='*BlockPoolBench*'
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "kv/block_pool.h"
#include "kv/prefix_cache.h"

namespace jisu {
namespace {

double NsSince(std::chrono::steady_clock::time_point t0, int64_t ops) {
  const auto dt = std::chrono::steady_clock::now() - t0;
  return std::chrono::duration<double, std::nano>(dt).count() / static_cast<double>(ops);
}

TEST(BlockPoolBench, DISABLED_AllocateFreeLookupAt100kBlocks) {
  constexpr int32_t kNumBlocks = 100000, kBlockSize = 16;
  BlockPool pool(kNumBlocks, kBlockSize);
  PrefixCache cache(&pool, PrefixCacheMode::kFull);

  // Allocate/Free of single blocks over a half-full pool.
  auto base = *pool.Allocate(kNumBlocks / 2);
  std::vector<int32_t> table;
  table.reserve(kNumBlocks);
  constexpr int kRounds = 20;
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < kRounds; ++r) {
    for (int i = 0; i < kNumBlocks / 4; ++i) pool.AllocateInto(1, &table);
    pool.Free(table);
    table.clear();
  }
  const double alloc_free_ns = NsSince(t0, int64_t{kRounds} * (kNumBlocks / 4));
  pool.Free(base);

  // Fill the pool with cached 64-block prompts of 8 tenants (1024 tokens each), all released.
  constexpr int kPromptBlocks = 64;
  constexpr int kPrompts = kNumBlocks / kPromptBlocks;
  std::vector<std::vector<int32_t>> prompts(kPrompts);
  for (int p = 0; p < kPrompts; ++p) {
    auto& t = prompts[p];
    for (int i = 0; i < kPromptBlocks * kBlockSize + 1; ++i) t.push_back(p * 7919 + i);
    std::vector<int32_t> blocks = *pool.Allocate(kPromptBlocks);
    uint64_t parent = kRootBlockHash;
    for (int b = 0; b < kPromptBlocks; ++b) {
      parent = cache.CommitFullBlock(
          blocks[b], parent, std::span<const int32_t>(t).subspan(b * kBlockSize, kBlockSize), "",
          p % 8, BlockKind::kPrivate);
    }
    pool.Free(blocks);
  }
  // Full hits: 64 blocks found per lookup, references taken and dropped.
  t0 = std::chrono::steady_clock::now();
  int64_t blocks_found = 0;
  for (int r = 0; r < 4; ++r) {
    for (int p = 0; p < kPrompts; ++p) {
      auto hit = cache.FindCachedPrefix(prompts[p], "", p % 8);
      blocks_found += static_cast<int64_t>(hit.size());
      pool.Free(hit);
    }
  }
  const double lookup_ns = NsSince(t0, 4 * kPrompts);
  EXPECT_EQ(blocks_found, int64_t{4} * kPrompts * kPromptBlocks);

  // Allocation that must evict (tenant-fair policy): every block comes from the policy.
  t0 = std::chrono::steady_clock::now();
  auto all = *pool.Allocate(pool.num_blocks() - pool.num_free());
  const double evict_ns = NsSince(t0, static_cast<int64_t>(all.size()));
  pool.Free(all);

  std::printf(
      "BlockPool bench, %d blocks x %d tokens, %s policy:\n"
      "  Allocate(1)+Free         %.1f ns per block\n"
      "  FindCachedPrefix (1024 tokens, 64-block hit, incl. Free of the hit) %.0f ns per call "
      "= %.1f ns per block\n"
      "  Allocate with eviction   %.1f ns per block\n",
      kNumBlocks, kBlockSize, pool.policy().name(), alloc_free_ns, lookup_ns,
      lookup_ns / kPromptBlocks, evict_ns);
}

}  // namespace
}  // namespace jisu
