// --kv-prealloc (comparison mode): admission reserves a request's whole possible length.
#include <gtest/gtest.h>

#include "kv/kv_cache.h"
#include "sched/scheduler.h"
#include "sched/scheduler_test_harness.h"

namespace jisu {
namespace {

using testing::Iota;
using testing::ReferenceGenerate;
using testing::SchedulerHarness;

SchedulerOptions PreallocOptions() {
  SchedulerOptions o;
  o.max_batch_tokens = 64;
  o.max_seqs = 8;
  o.max_queue = 8;
  o.block_size = 4;
  o.max_model_len = 64;
  o.kv_prealloc = true;
  return o;
}

TEST(SchedulerPrealloc, ReservesPromptPlusMaxTokensAtAdmission) {
  SchedulerHarness h(PreallocOptions(), 32, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(6), 10).ok());  // 16 tokens = 4 blocks
  h.Step();
  EXPECT_EQ(h.sched->kv().block_table(1).size(), 4u);
  EXPECT_EQ(h.pool.stats().num_in_use, 4);
  // 7 of 16 slots hold tokens (6 prompt + 1 fed-back sample): 9/16 unused.
  EXPECT_DOUBLE_EQ(h.sched->stats().kv_fragmentation, 9.0 / 16.0);
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.pool.stats().num_in_use, 0);
}

TEST(SchedulerPrealloc, CapsTheReservationAtMaxModelLen) {
  SchedulerHarness h(PreallocOptions(), 32, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(10), 1000).ok());
  h.Step();
  EXPECT_EQ(h.sched->kv().block_table(1).size(), 16u);  // 64 tokens
}

TEST(SchedulerPrealloc, AdmitsFewerButNeverPreemptsAndMatchesTheReference) {
  // 32 blocks of 4 = 128 slots; each request reserves 8 + 24 = 32 tokens = 8 blocks: 4 fit.
  SchedulerHarness pre(PreallocOptions(), 32, PrefixCacheMode::kOff);
  SchedulerOptions paged_options = PreallocOptions();
  paged_options.kv_prealloc = false;
  SchedulerHarness paged(paged_options, 32, PrefixCacheMode::kOff);
  for (RequestId id = 0; id < 8; ++id) {
    ASSERT_TRUE(pre.Add(id, Iota(8, 10 * static_cast<int32_t>(id) + 1), 24).ok());
    ASSERT_TRUE(paged.Add(id, Iota(8, 10 * static_cast<int32_t>(id) + 1), 24).ok());
  }
  pre.Step();
  paged.Step();
  EXPECT_EQ(pre.sched->num_running(), 4);
  EXPECT_EQ(paged.sched->num_running(), 8);  // 8 prompts of 8 tokens: 16 blocks
  ASSERT_TRUE(pre.RunAll());
  ASSERT_TRUE(paged.RunAll());
  EXPECT_EQ(pre.sched->stats().num_preemptions, 0);
  EXPECT_GT(paged.sched->stats().num_preemptions, 0);  // 8 x 32 tokens do not fit 128 slots
  for (RequestId id = 0; id < 8; ++id) {
    const auto expected =
        ReferenceGenerate(Iota(8, 10 * static_cast<int32_t>(id) + 1), 24, 64, false);
    EXPECT_EQ(pre.done.at(id).output_tokens, expected) << id;
    EXPECT_EQ(paged.done.at(id).output_tokens, expected) << id;
  }
}

}  // namespace
}  // namespace jisu
