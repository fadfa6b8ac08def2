#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include "sched/scheduler_test_harness.h"

namespace jisu {
namespace {

using testing::Iota;
using testing::ReferenceGenerate;
using testing::SchedulerHarness;

SchedulerOptions SmallOptions() {
  SchedulerOptions o;
  o.max_batch_tokens = 16;
  o.max_seqs = 8;
  o.max_queue = 8;
  o.block_size = 4;
  o.max_model_len = 128;
  return o;
}

void ExpectFieldNamed(const SchedulerOptions& o, const std::string& field) {
  const Status s = o.Validate();
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << field;
  EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
}

TEST(SchedulerOptions, ValidateNamesTheBadField) {
  EXPECT_TRUE(SchedulerOptions().Validate().ok());
  SchedulerOptions o;
  o.max_batch_tokens = 0;
  ExpectFieldNamed(o, "max_batch_tokens");
  o = {};
  o.max_seqs = 0;
  ExpectFieldNamed(o, "max_seqs");
  o = {};
  o.max_queue = -1;
  ExpectFieldNamed(o, "max_queue");
  o = {};
  o.max_chunk_tokens = -3;
  ExpectFieldNamed(o, "max_chunk_tokens");
  o = {};
  o.block_size = 0;
  ExpectFieldNamed(o, "block_size");
  o = {};
  o.max_model_len = 1;
  ExpectFieldNamed(o, "max_model_len");
  o = {};
  o.chunked_prefill = false;  // 2048 tokens cannot hold a 4096-token prompt in one step
  ExpectFieldNamed(o, "max_batch_tokens");
}

TEST(SchedulerOptions, ValidateForChecksThePool) {
  SchedulerOptions o = SmallOptions();  // 128 tokens = 32 blocks of 4
  EXPECT_TRUE(Scheduler::ValidateFor(o, BlockPool(32, 4)).ok());
  EXPECT_EQ(Scheduler::ValidateFor(o, BlockPool(31, 4)).code(), Status::Code::kInvalidArgument);
  const Status s = Scheduler::ValidateFor(o, BlockPool(64, 8));
  EXPECT_NE(s.message().find("block_size"), std::string::npos) << s.message();
}

TEST(Scheduler, AddRequestRejectsBadRequestsAndFullQueue) {
  SchedulerOptions o = SmallOptions();
  o.max_queue = 2;
  SchedulerHarness h(o, 64, PrefixCacheMode::kOff);
  EXPECT_EQ(h.Add(1, {}, 4).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(h.Add(1, Iota(128), 4).code(), Status::Code::kOutOfRange);
  EXPECT_EQ(h.Add(1, {1, -2}, 4).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(h.Add(1, Iota(3), 0).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(h.Add(1, Iota(3), 4, 0, /*tenant=*/-1).code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE(h.Add(1, Iota(127), 4).ok());
  EXPECT_EQ(h.Add(1, Iota(3), 4).code(), Status::Code::kInvalidArgument);  // duplicate id
  ASSERT_TRUE(h.Add(2, Iota(3), 4).ok());
  const Status full = h.Add(3, Iota(3), 4);
  EXPECT_EQ(full.code(), Status::Code::kResourceExhausted);
  EXPECT_NE(full.message().find("queue full"), std::string::npos) << full.message();
  EXPECT_EQ(h.sched->stats().num_rejected, 1);
  // Admission drains the queue; then there is room again.
  h.Step();
  EXPECT_EQ(h.sched->num_waiting(), 1);  // 127 + 3 > 16-token budget: #2 waits behind #1
  EXPECT_TRUE(h.Add(3, Iota(3), 4).ok());
}

TEST(Scheduler, DecodesAreScheduledBeforeNewPrefills) {
  SchedulerOptions o = SmallOptions();
  o.max_batch_tokens = 8;
  SchedulerHarness h(o, 64, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(4, 10), 30).ok());
  ASSERT_TRUE(h.Add(2, Iota(4, 20), 30).ok());
  StepPlan p = h.Step();
  ASSERT_EQ(p.sequences.size(), 2u);
  ASSERT_TRUE(h.Add(3, Iota(20, 30), 5).ok());
  for (int step = 0; step < 5; ++step) {
    p = h.Step();
    ASSERT_EQ(p.sequences.size(), 3u) << step;
    EXPECT_EQ(p.sequences[0].request_id, 1);
    EXPECT_EQ(p.sequences[0].num_tokens, 1);
    EXPECT_TRUE(p.sequences[0].needs_logits());
    EXPECT_EQ(p.sequences[1].request_id, 2);
    EXPECT_EQ(p.sequences[1].num_tokens, 1);
    EXPECT_EQ(p.sequences[2].request_id, 3);
    EXPECT_EQ(p.sequences[2].start_position, 6 * step);
    if (p.sequences[2].needs_logits()) {
      EXPECT_EQ(p.sequences[2].num_tokens, 20 - 18);
      break;
    }
    EXPECT_EQ(p.sequences[2].num_tokens, 6) << step;  // what the decodes leave of the budget
    EXPECT_EQ(p.num_tokens(), 8);
  }
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.at(3).output_tokens, ReferenceGenerate(Iota(20, 30), 5, 128, false));
}

TEST(Scheduler, ChunkedPrefillKeepsOthersDecodingEveryStep) {
  SchedulerOptions o = SmallOptions();
  o.max_model_len = 256;
  SchedulerHarness h(o, 200, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(3, 100), 40).ok());
  ASSERT_TRUE(h.Add(2, Iota(5, 200), 40).ok());
  h.Step();
  ASSERT_TRUE(h.Add(3, Iota(100, 300), 4).ok());
  int prefill_steps = 0;
  while (true) {
    StepPlan p = h.Step();
    ASSERT_EQ(p.sequences.size(), 3u);
    EXPECT_EQ(p.sequences[0].num_tokens, 1);  // 1 and 2 decode every step
    EXPECT_EQ(p.sequences[1].num_tokens, 1);
    const ScheduledSequence& c = p.sequences[2];
    EXPECT_EQ(c.request_id, 3);
    EXPECT_EQ(c.start_position, 14 * prefill_steps);
    ++prefill_steps;
    if (c.needs_logits()) {
      EXPECT_EQ(c.num_tokens, 100 - 14 * 7);
      break;
    }
    EXPECT_EQ(c.num_tokens, 14);
    EXPECT_FALSE(c.needs_logits());
  }
  EXPECT_EQ(prefill_steps, 8);  // ceil(100 / 14)
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.at(1).output_tokens, ReferenceGenerate(Iota(3, 100), 40, 256, false));
  EXPECT_EQ(h.done.at(3).output_tokens, ReferenceGenerate(Iota(100, 300), 4, 256, false));
}

TEST(Scheduler, MaxChunkTokensCapsEachPrefill) {
  SchedulerOptions o = SmallOptions();
  o.max_chunk_tokens = 5;
  SchedulerHarness h(o, 64, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(12), 2).ok());
  ASSERT_TRUE(h.Add(2, Iota(12, 50), 2).ok());
  StepPlan p = h.Step();
  ASSERT_EQ(p.sequences.size(), 2u);
  EXPECT_EQ(p.sequences[0].num_tokens, 5);
  EXPECT_EQ(p.sequences[1].num_tokens, 5);
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.at(2).output_tokens, ReferenceGenerate(Iota(12, 50), 2, 128, false));
}

TEST(Scheduler, WithoutChunkingAPromptIsFedWhole) {
  SchedulerOptions o = SmallOptions();
  o.chunked_prefill = false;
  o.max_model_len = 64;
  o.max_batch_tokens = 64;
  SchedulerHarness h(o, 64, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(10), 20).ok());
  ASSERT_TRUE(h.Add(2, Iota(10, 40), 20).ok());
  h.Step();
  ASSERT_TRUE(h.Add(3, Iota(63, 100), 1).ok());  // 63 > 64 - 2 decodes: waits for them
  bool seen = false;
  while (!h.sched->idle()) {
    StepPlan p = h.Step();
    for (const auto& s : p.sequences) {
      if (s.request_id != 3) continue;
      EXPECT_EQ(s.num_tokens, 63);
      EXPECT_EQ(p.sequences.size(), 1u);  // only once the decodes are done
      seen = true;
    }
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(h.done.at(3).output_tokens, ReferenceGenerate(Iota(63, 100), 1, 64, false));
}

TEST(Scheduler, MaxSeqsBoundsRunningAndScheduled) {
  SchedulerOptions o = SmallOptions();
  o.max_seqs = 2;
  SchedulerHarness h(o, 64, PrefixCacheMode::kOff);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(h.Add(i, Iota(3, 10 * i), 3).ok());
  while (!h.sched->idle()) {
    StepPlan p = h.Step();
    EXPECT_LE(p.sequences.size(), 2u);
    EXPECT_LE(h.sched->num_running(), 2);
  }
  EXPECT_EQ(h.done.size(), 5u);
}

TEST(Scheduler, AdmitsOnlyWhenBlocksAreAvailable) {
  SchedulerOptions o = SmallOptions();
  o.max_model_len = 40;
  o.max_batch_tokens = 64;
  SchedulerHarness h(o, 10, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(30), 4).ok());      // 8 blocks now, 9 at the end
  ASSERT_TRUE(h.Add(2, Iota(12, 70), 2).ok());  // needs 3
  StepPlan p = h.Step();
  ASSERT_EQ(p.sequences.size(), 1u);
  EXPECT_EQ(h.sched->num_waiting(), 1);
  while (h.sched->Find(1)) {
    EXPECT_EQ(h.sched->Find(2)->status, RequestStatus::kWaiting);
    h.Step();
  }
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.sched->stats().num_preemptions, 0);
  EXPECT_EQ(h.done.at(2).output_tokens, ReferenceGenerate(Iota(12, 70), 2, 40, false));
  EXPECT_EQ(h.pool.stats().num_in_use, 0);
}

TEST(Scheduler, PreemptsTheLowestPriorityThenRecomputesIdentically) {
  SchedulerOptions o = SmallOptions();
  o.block_size = 2;
  o.max_model_len = 12;
  SchedulerHarness h(o, 6, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(6, 10), 4, /*priority=*/0).ok());  // arrived first, low priority
  ASSERT_TRUE(h.Add(2, Iota(6, 20), 4, /*priority=*/5).ok());
  StepPlan p = h.Step();  // both admitted (FIFO): 3 full blocks each, pool full
  ASSERT_EQ(p.sequences.size(), 2u);
  EXPECT_EQ(p.sequences[0].request_id, 1);
  p = h.Step();  // 2, now served first, needs a 4th block: 1 is preempted
  EXPECT_EQ(p.preempted, std::vector<RequestId>{1});
  ASSERT_EQ(p.sequences.size(), 1u);
  EXPECT_EQ(p.sequences[0].request_id, 2);
  EXPECT_EQ(h.sched->Find(1)->status, RequestStatus::kPreempted);
  EXPECT_EQ(h.sched->Find(1)->num_computed_tokens, 0);
  ASSERT_TRUE(h.RunAll());
  EXPECT_GE(h.done.at(1).num_preemptions, 1);
  EXPECT_EQ(h.done.at(1).output_tokens, ReferenceGenerate(Iota(6, 10), 4, 12, false));
  EXPECT_EQ(h.done.at(2).output_tokens, ReferenceGenerate(Iota(6, 20), 4, 12, false));
}

TEST(Scheduler, LatestArrivalIsPreemptedAmongEqualPriorities) {
  SchedulerOptions o = SmallOptions();
  o.block_size = 2;
  o.max_model_len = 12;
  SchedulerHarness h(o, 6, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(6, 10), 4).ok());
  ASSERT_TRUE(h.Add(2, Iota(6, 20), 4).ok());
  h.Step();
  StepPlan p = h.Step();
  EXPECT_EQ(p.preempted, std::vector<RequestId>{2});
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.at(2).output_tokens, ReferenceGenerate(Iota(6, 20), 4, 12, false));
}

TEST(Scheduler, PrefixCacheHitSkipsCachedBlocks) {
  SchedulerOptions o = SmallOptions();
  SchedulerHarness h(o, 40, PrefixCacheMode::kFull);
  std::vector<int32_t> first = Iota(14, 7);  // 3 full blocks of 4 + 2
  ASSERT_TRUE(h.Add(1, first, 1).ok());
  StepPlan p = h.sched->Schedule();
  std::string error;
  // Copied now: the spans die with the request, at ApplyStepOutput.
  const std::vector<int32_t> cached(p.sequences[0].block_table.begin(),
                                    p.sequences[0].block_table.begin() + 3);
  ASSERT_TRUE(h.sched->ApplyStepOutput(h.runner.Run(p, &error)).ok());
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.pool.stats().num_evictable, 3);

  std::vector<int32_t> second(first.begin(), first.begin() + 12);
  second.insert(second.end(), {900, 901, 902});
  ASSERT_TRUE(h.Add(2, second, 3).ok());
  const BlockPoolStats before = h.pool.stats();
  p = h.sched->Schedule();
  const BlockPoolStats after = h.pool.stats();
  ASSERT_EQ(p.sequences.size(), 1u);
  EXPECT_EQ(p.sequences[0].start_position, 12);
  EXPECT_EQ(p.sequences[0].num_tokens, 3);
  EXPECT_EQ(std::vector<int32_t>(p.sequences[0].block_table.begin(),
                                 p.sequences[0].block_table.begin() + 3),
            cached);
  EXPECT_EQ(before.num_free - after.num_free, 1);  // one new block, not four
  EXPECT_EQ(before.num_evictable - after.num_evictable, 3);
  EXPECT_EQ(h.sched->Find(2)->num_computed_tokens, 12);
  auto fin = h.sched->ApplyStepOutput(h.runner.Run(p, &error));
  ASSERT_TRUE(fin.ok());
  EXPECT_EQ(error, "");
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.at(2).output_tokens, ReferenceGenerate(second, 3, 128, false));
  EXPECT_EQ(h.cache.stats().total.hit_tokens, 12);

  // A different salt never shares.
  ASSERT_TRUE(h.Add(3, second, 1, 0, 0, "other-tenant-salt").ok());
  p = h.Step();
  EXPECT_EQ(p.sequences[0].start_position, 0);
}

TEST(Scheduler, CancelFreesBlocksWhateverTheState) {
  SchedulerOptions o = SmallOptions();
  o.max_batch_tokens = 12;
  SchedulerHarness h(o, 64, PrefixCacheMode::kOff);
  ASSERT_EQ(h.pool.stats().num_in_use, 0);
  ASSERT_TRUE(h.Add(1, Iota(6), 50).ok());
  ASSERT_TRUE(h.Add(2, Iota(9, 30), 50).ok());  // chunked: 6 of 9 in step 1
  ASSERT_TRUE(h.Add(3, Iota(9, 60), 50).ok());  // waits
  h.Step();
  h.Step();
  EXPECT_GT(h.pool.stats().num_in_use, 0);
  EXPECT_TRUE(h.sched->Cancel(3).ok());  // waiting
  EXPECT_TRUE(h.sched->Cancel(1).ok());  // running
  EXPECT_TRUE(h.sched->CheckInvariants().ok());
  EXPECT_EQ(h.sched->Cancel(1).code(), Status::Code::kNotFound);
  h.Step();
  EXPECT_TRUE(h.sched->Cancel(2).ok());
  EXPECT_TRUE(h.sched->idle());
  EXPECT_EQ(h.pool.stats().num_in_use, 0);
  EXPECT_EQ(h.sched->stats().num_cancelled, 3);
  EXPECT_TRUE(h.sched->CheckInvariants().ok());
}

TEST(Scheduler, CancelBetweenScheduleAndApplyDropsTheSlice) {
  SchedulerOptions o = SmallOptions();
  SchedulerHarness h(o, 64, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(4), 5).ok());
  ASSERT_TRUE(h.Add(2, Iota(4, 9), 5).ok());
  StepPlan p = h.sched->Schedule();
  std::string error;
  StepOutput out = h.runner.Run(p, &error);
  ASSERT_TRUE(h.sched->Cancel(1).ok());
  std::erase_if(out.sampled, [](const SampledToken& t) { return t.request_id == 1; });
  ASSERT_TRUE(h.sched->ApplyStepOutput(out).ok());
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.count(1), 0u);
  EXPECT_EQ(h.done.at(2).output_tokens, ReferenceGenerate(Iota(4, 9), 5, 128, false));
}

TEST(Scheduler, BadStepOutputIsRejectedWithoutChange) {
  SchedulerOptions o = SmallOptions();
  SchedulerHarness h(o, 64, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(4), 5).ok());
  StepPlan p = h.sched->Schedule();
  EXPECT_EQ(h.sched->ApplyStepOutput({}).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(h.sched->Find(1)->num_computed_tokens, 0);
  StepPlan again = h.sched->Schedule();
  EXPECT_EQ(again.token_ids, p.token_ids);
  StepOutput extra;
  extra.sampled = {{1, 5, false}, {7, 5, false}};
  EXPECT_EQ(h.sched->ApplyStepOutput(extra).status().code(), Status::Code::kInvalidArgument);
  h.sched->Schedule();
  std::string error;
  ASSERT_TRUE(h.sched->ApplyStepOutput(h.runner.Run(again, &error)).ok());
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.at(1).output_tokens, ReferenceGenerate(Iota(4), 5, 128, false));
}

TEST(Scheduler, FinishesOnStopAndOnContextEnd) {
  SchedulerOptions o = SmallOptions();
  o.max_model_len = 20;
  SchedulerHarness h(o, 64, PrefixCacheMode::kOff, /*stops=*/true);
  ASSERT_TRUE(h.Add(1, Iota(15), 100).ok());
  // Find a prompt whose first generated token is a stop token.
  std::vector<int32_t> stop_prompt;
  for (int32_t x = 0; stop_prompt.empty(); ++x) {
    if (testing::FakeIsStop(testing::FakeNextToken(std::vector<int32_t>{x, 3}))) {
      stop_prompt = {x, 3};
    }
  }
  ASSERT_TRUE(h.Add(2, stop_prompt, 100).ok());
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.at(2).reason, FinishReason::kStop);
  EXPECT_EQ(h.done.at(2).output_tokens.size(), 1u);
  const auto ref = ReferenceGenerate(Iota(15), 100, 20, true);
  EXPECT_EQ(h.done.at(1).output_tokens, ref);
  EXPECT_EQ(h.done.at(1).reason,
            testing::FakeIsStop(ref.back()) ? FinishReason::kStop : FinishReason::kLength);
}

TEST(Scheduler, StatsReportCountsUsageAndFragmentation) {
  SchedulerOptions o = SmallOptions();
  o.max_batch_tokens = 8;
  SchedulerHarness h(o, 32, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(5), 10).ok());
  ASSERT_TRUE(h.Add(2, Iota(5, 50), 10).ok());
  h.Step();  // 1 whole (5), 2 chunk of 3
  SchedulerStats s = h.sched->stats();
  EXPECT_EQ(s.num_running, 2);
  EXPECT_EQ(s.num_waiting, 0);
  EXPECT_EQ(s.num_steps, 1);
  EXPECT_EQ(s.last_step_tokens, 8);
  EXPECT_EQ(s.last_step_seqs, 2);
  EXPECT_DOUBLE_EQ(s.kv_usage, 3.0 / 32);  // blocks: 2 + 1
  // Slots: 1 holds 6 tokens in 8, 2 holds 4 (5 known) in 4: unused 2 of 12.
  EXPECT_DOUBLE_EQ(s.kv_fragmentation, 2.0 / 12);
}

}  // namespace
}  // namespace jisu
