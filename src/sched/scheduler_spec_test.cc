// Multi-token steps: requests carrying drafts are fed them with their decode and verified by the
// fake runner (greedy-exact, as the engine does). Whatever the drafts and accept counts, the
// token streams equal plain decoding; only accepted full blocks are committed; rejected drafts'
// blocks go back; preemption and cancellation in the middle of a window leak nothing.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "sched/scheduler.h"
#include "sched/scheduler_test_harness.h"

namespace jisu {
namespace {

using testing::FakeNextToken;
using testing::Iota;
using testing::ReferenceGenerate;
using testing::SchedulerHarness;

SchedulerOptions SpecOptions() {
  SchedulerOptions o;
  o.max_batch_tokens = 32;
  o.max_seqs = 8;
  o.max_queue = 64;
  o.block_size = 4;
  o.max_model_len = 128;
  return o;
}

// Proposes the true continuation (the fake model's greedy tokens), each token replaced by a
// wrong one with probability `p_wrong`; k drawn from [k_min, k_max].
class ScriptedDrafter {
 public:
  ScriptedDrafter(uint32_t seed, int k_min, int k_max, double p_wrong)
      : rng_(seed), k_min_(k_min), k_max_(k_max), p_wrong_(p_wrong) {}

  std::vector<int32_t> Propose(std::vector<int32_t> tokens) {
    const int k = std::uniform_int_distribution<int>(k_min_, k_max_)(rng_);
    std::vector<int32_t> drafts;
    for (int i = 0; i < k; ++i) {
      int32_t t = FakeNextToken(tokens);
      if (std::bernoulli_distribution(p_wrong_)(rng_)) t = (t + 1) % testing::kFakeVocab;
      drafts.push_back(t);
      tokens.push_back(t);
    }
    return drafts;
  }

 private:
  std::mt19937 rng_;
  int k_min_, k_max_;
  double p_wrong_;
};

// Gives every running request at a decode a proposal (the engine's loop does the same after
// each step).
void ProposeAll(Scheduler& sched, ScriptedDrafter& drafter, const std::set<RequestId>& ids) {
  for (RequestId id : ids) {
    const SchedRequest* r = sched.Find(id);
    if (!r || r->status != RequestStatus::kRunning ||
        r->num_computed_tokens + 1 != r->num_tokens()) {
      continue;
    }
    ASSERT_TRUE(sched.SetDraftTokens(id, drafter.Propose(r->tokens)).ok());
  }
}

TEST(SchedulerSpec, CorrectDraftsGiveSeveralTokensPerStep) {
  SchedulerHarness h(SpecOptions(), 64, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(6), 20).ok());
  h.Step();  // prefill: the first token
  const SchedRequest* r = h.sched->Find(1);
  ASSERT_EQ(r->num_tokens(), 7);
  ScriptedDrafter always_right(1, 4, 4, 0.0);
  ASSERT_TRUE(h.sched->SetDraftTokens(1, always_right.Propose(r->tokens)).ok());
  const std::vector<int32_t> drafts = r->draft_tokens;
  StepPlan p = h.Step();
  ASSERT_EQ(p.sequences.size(), 1u);
  const ScheduledSequence& s = p.sequences[0];
  EXPECT_EQ(s.start_position, 6);
  EXPECT_EQ(s.num_tokens, 5);
  EXPECT_EQ(s.num_draft_tokens, 4);
  EXPECT_EQ(s.first_logits_row, 0);
  EXPECT_EQ(s.num_logits_rows, 5);
  EXPECT_EQ(p.logits_rows, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(std::vector<int32_t>(p.token_ids.begin() + 1, p.token_ids.end()), drafts);
  EXPECT_EQ(s.block_table.size(), 3u);  // positions 0..10
  // All four accepted plus the bonus token: 5 new tokens, KV valid for all but the last.
  EXPECT_EQ(r->num_tokens(), 12);
  EXPECT_EQ(r->num_computed_tokens, 11);
  EXPECT_TRUE(r->draft_tokens.empty());
  EXPECT_EQ(h.sched->kv().num_committed_blocks(1), 2);
  EXPECT_EQ(h.sched->stats().num_draft_tokens, 4);
  EXPECT_EQ(h.sched->stats().num_accepted_draft_tokens, 4);
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.at(1).output_tokens, ReferenceGenerate(Iota(6), 20, 128, false));
}

TEST(SchedulerSpec, RejectedDraftsAreRolledBack) {
  SchedulerOptions o = SpecOptions();
  SchedulerHarness h(o, 64, PrefixCacheMode::kFull);
  ASSERT_TRUE(h.Add(1, Iota(7), 30).ok());
  h.Step();
  const SchedRequest* r = h.sched->Find(1);
  ASSERT_EQ(r->num_tokens(), 8);
  // First draft right, the rest wrong: 1 draft + the correction are kept.
  std::vector<int32_t> drafts = ScriptedDrafter(2, 8, 8, 0.0).Propose(r->tokens);
  for (size_t i = 1; i < drafts.size(); ++i) drafts[i] = (drafts[i] + 7) % testing::kFakeVocab;
  ASSERT_TRUE(h.sched->SetDraftTokens(1, drafts).ok());
  const int64_t in_use_before = h.pool.stats().num_in_use;
  const int64_t commits_before = h.cache.stats().commits;
  StepPlan p = h.sched->Schedule();
  ASSERT_EQ(p.sequences[0].num_draft_tokens, 8);
  EXPECT_EQ(h.pool.stats().num_in_use, 4);  // positions 0..15
  EXPECT_EQ(in_use_before, 2);
  std::string error;
  StepOutput out = h.runner.Run(p, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(out.sampled.size(), 2u);
  EXPECT_EQ(out.sampled[0].token_id, drafts[0]);
  ASSERT_TRUE(h.sched->ApplyStepOutput(out).ok());
  EXPECT_TRUE(h.sched->CheckInvariants().ok());
  EXPECT_EQ(r->num_tokens(), 10);
  EXPECT_EQ(r->num_computed_tokens, 9);
  // Blocks for positions 10..15 went back; blocks 0 and 1 (positions 0..7) are committed, the
  // block of 8..11 holds rejected drafts' KV in slots 10, 11 and is not.
  EXPECT_EQ(h.sched->kv().num_blocks(1), 3);
  EXPECT_EQ(h.pool.stats().num_in_use, 3);
  EXPECT_EQ(h.cache.stats().commits - commits_before, 1);
  EXPECT_FALSE(h.pool.is_cached(h.sched->kv().block_table(1)[2]));
  EXPECT_EQ(h.sched->stats().num_accepted_draft_tokens, 1);
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.at(1).output_tokens, ReferenceGenerate(Iota(7), 30, 128, false));
  EXPECT_EQ(h.pool.stats().num_in_use, 0);
}

TEST(SchedulerSpec, DraftsFitMaxTokensAndTheContext) {
  SchedulerOptions o = SpecOptions();
  o.max_model_len = 16;
  SchedulerHarness h(o, 64, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(4), 3).ok());        // 2 tokens left after the first: at most 1 draft
  ASSERT_TRUE(h.Add(2, Iota(12, 40), 50).ok());  // context: 16 - 13 = 3 tokens left
  h.Step();
  ScriptedDrafter right(3, 8, 8, 0.0);
  for (RequestId id : {1, 2}) {
    ASSERT_TRUE(h.sched->SetDraftTokens(id, right.Propose(h.sched->Find(id)->tokens)).ok());
  }
  StepPlan p = h.Step();
  ASSERT_EQ(p.sequences.size(), 2u);
  EXPECT_EQ(p.sequences[0].num_draft_tokens, 1);
  EXPECT_EQ(p.sequences[1].num_draft_tokens, 2);
  EXPECT_EQ(h.done.at(1).reason, FinishReason::kLength);
  EXPECT_EQ(h.done.at(1).output_tokens, ReferenceGenerate(Iota(4), 3, 16, false));
  EXPECT_EQ(h.done.at(2).reason, FinishReason::kLength);
  EXPECT_EQ(h.done.at(2).output_tokens, ReferenceGenerate(Iota(12, 40), 50, 16, false));
  EXPECT_TRUE(h.sched->idle());
  EXPECT_EQ(h.pool.stats().num_in_use, 0);
}

TEST(SchedulerSpec, DraftsTakeOnlyTheLeftoverBudget) {
  SchedulerOptions o = SpecOptions();
  o.max_batch_tokens = 6;
  o.block_size = 2;
  o.max_model_len = 16;
  SchedulerHarness h(o, 9, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(3), 10).ok());
  ASSERT_TRUE(h.Add(2, Iota(3, 20), 10).ok());
  h.Step();  // both prefilled: 2 blocks each, 5 free
  ScriptedDrafter right(4, 8, 8, 0.0);
  for (RequestId id : {1, 2}) {
    ASSERT_TRUE(h.sched->SetDraftTokens(id, right.Propose(h.sched->Find(id)->tokens)).ok());
  }
  // Budget 6 - 2 decodes = 4 draft tokens, to the first in service order.
  StepPlan p = h.sched->Schedule();
  ASSERT_EQ(p.sequences.size(), 2u);
  EXPECT_EQ(p.sequences[0].num_draft_tokens, 4);
  EXPECT_EQ(p.sequences[1].num_draft_tokens, 0);
  EXPECT_EQ(p.num_tokens(), 6);
  std::string error;
  ASSERT_TRUE(h.sched->ApplyStepOutput(h.runner.Run(p, &error)).ok());
  EXPECT_EQ(error, "");
  // Request 2's drafts were dropped with the step that did not feed them.
  EXPECT_TRUE(h.sched->Find(2)->draft_tokens.empty());

  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.at(1).output_tokens, ReferenceGenerate(Iota(3), 10, 16, false));
  EXPECT_EQ(h.done.at(2).output_tokens, ReferenceGenerate(Iota(3, 20), 10, 16, false));
}

TEST(SchedulerSpec, DraftsAreCutToTheBlocksLeft) {
  SchedulerOptions o = SpecOptions();
  o.block_size = 2;
  o.max_model_len = 16;
  SchedulerHarness h(o, 9, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(7), 8).ok());
  ASSERT_TRUE(h.Add(2, Iota(7, 20), 8).ok());
  h.Step();  // 4 blocks each (positions 0..7 with the decode to come), 1 free
  EXPECT_EQ(h.pool.num_free(), 1);
  ScriptedDrafter right(4, 8, 8, 0.0);
  for (RequestId id : {1, 2}) {
    ASSERT_TRUE(h.sched->SetDraftTokens(id, right.Propose(h.sched->Find(id)->tokens)).ok());
  }
  // 1's drafts get the last block (2 positions); 2 gets none and nobody is preempted for them.
  StepPlan p = h.Step();
  EXPECT_TRUE(p.preempted.empty());
  ASSERT_EQ(p.sequences.size(), 2u);
  EXPECT_EQ(p.sequences[0].num_draft_tokens, 2);
  EXPECT_EQ(p.sequences[1].num_draft_tokens, 0);
  EXPECT_EQ(h.sched->stats().num_preemptions, 0);
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.at(1).output_tokens, ReferenceGenerate(Iota(7), 8, 16, false));
  EXPECT_EQ(h.done.at(2).output_tokens, ReferenceGenerate(Iota(7, 20), 8, 16, false));
  EXPECT_EQ(h.pool.num_free(), 9);
}

TEST(SchedulerSpec, FinishedTokenDropsTheRest) {
  SchedulerHarness h(SpecOptions(), 64, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(5), 50).ok());
  h.Step();
  const std::vector<int32_t> drafts = {11, 12, 13};
  ASSERT_TRUE(h.sched->SetDraftTokens(1, drafts).ok());
  StepPlan p = h.sched->Schedule();
  ASSERT_EQ(p.sequences[0].num_draft_tokens, 3);
  // The runner accepted 11 and stopped at 12 (EOS), then (wrongly) went on: 13 is dropped.
  StepOutput out;
  out.sampled = {{1, 11, false}, {1, 12, true}, {1, 13, false}};
  auto fin = h.sched->ApplyStepOutput(out);
  ASSERT_TRUE(fin.ok()) << fin.status().ToString();
  ASSERT_EQ(fin->size(), 1u);
  EXPECT_EQ((*fin)[0].reason, FinishReason::kStop);
  std::vector<int32_t> expected = {ReferenceGenerate(Iota(5), 1, 128, false)[0], 11, 12};
  EXPECT_EQ((*fin)[0].output_tokens, expected);
  EXPECT_EQ(h.pool.stats().num_in_use, 0);
  EXPECT_TRUE(h.sched->CheckInvariants().ok());
}

TEST(SchedulerSpec, BadOutputsAreRejectedWithoutChange) {
  SchedulerHarness h(SpecOptions(), 64, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(5), 50).ok());
  ASSERT_TRUE(h.Add(2, Iota(5, 30), 50).ok());
  h.Step();
  ASSERT_TRUE(h.sched->SetDraftTokens(1, {11, 12}).ok());
  StepPlan p = h.sched->Schedule();
  ASSERT_EQ(p.sequences[0].num_draft_tokens, 2);
  EXPECT_EQ(p.sequences[1].first_logits_row, 3);
  EXPECT_EQ(p.logits_rows, (std::vector<int64_t>{0, 1, 2, 3}));
  StepOutput too_many;
  too_many.sampled = {{1, 11, false}, {1, 12, false}, {1, 5, false}, {1, 6, false}, {2, 3, false}};
  EXPECT_EQ(h.sched->ApplyStepOutput(too_many).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(h.sched->Find(1)->num_tokens(), 6);
  EXPECT_EQ(h.sched->Find(1)->draft_tokens.size(), 2u);  // kept for the re-plan
  StepPlan again = h.sched->Schedule();
  EXPECT_EQ(again.token_ids, p.token_ids);
  StepOutput scattered;
  scattered.sampled = {{1, 11, false}, {2, 3, false}, {1, 12, false}};
  const auto bad = h.sched->ApplyStepOutput(scattered);
  EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("consecutive"), std::string::npos);
  StepOutput plain_two;  // two tokens for request 2, which had no drafts
  h.sched->Schedule();
  plain_two.sampled = {{1, 11, false}, {2, 3, false}, {2, 4, false}};
  EXPECT_EQ(h.sched->ApplyStepOutput(plain_two).status().code(), Status::Code::kInvalidArgument);
  // SetDraftTokens: unknown id, negative token, a step in flight, a request not at a decode.
  EXPECT_EQ(h.sched->SetDraftTokens(99, {1}).code(), Status::Code::kNotFound);
  EXPECT_EQ(h.sched->SetDraftTokens(1, {1, -1}).code(), Status::Code::kInvalidArgument);
  StepPlan last = h.sched->Schedule();
  EXPECT_EQ(h.sched->SetDraftTokens(1, {1}).code(), Status::Code::kInvalidArgument);
  std::string error;
  ASSERT_TRUE(h.sched->ApplyStepOutput(h.runner.Run(last, &error)).ok());
  EXPECT_EQ(error, "");
  ASSERT_TRUE(h.Add(3, Iota(5, 60), 5).ok());
  EXPECT_TRUE(h.sched->SetDraftTokens(3, {1, 2}).ok());  // waiting: dropped
  EXPECT_TRUE(h.sched->Find(3)->draft_tokens.empty());
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.at(1).output_tokens, ReferenceGenerate(Iota(5), 50, 128, false));
  EXPECT_EQ(h.done.at(2).output_tokens, ReferenceGenerate(Iota(5, 30), 50, 128, false));
}

TEST(SchedulerSpec, RunnerTokensOffTheDraftsKeepOnlyMatchingKv) {
  // A runner that returns tokens differing from the drafts but claims more than one: the
  // scheduler keeps KV only for the drafts that equal the tokens now at their positions.
  SchedulerHarness h(SpecOptions(), 64, PrefixCacheMode::kOff);
  ASSERT_TRUE(h.Add(1, Iota(5), 50).ok());
  h.Step();
  ASSERT_TRUE(h.sched->SetDraftTokens(1, {11, 12, 13}).ok());
  h.sched->Schedule();
  StepOutput out;
  out.sampled = {{1, 11, false}, {1, 99, false}, {1, 13, false}};
  ASSERT_TRUE(h.sched->ApplyStepOutput(out).ok());
  const SchedRequest* r = h.sched->Find(1);
  EXPECT_EQ(r->num_tokens(), 9);
  EXPECT_EQ(r->num_computed_tokens, 7);  // the fed token and draft 11; 99 != 12 stops it
  EXPECT_TRUE(h.sched->CheckInvariants().ok());
  ASSERT_TRUE(h.sched->Cancel(1).ok());
  EXPECT_EQ(h.pool.stats().num_in_use, 0);
}

TEST(SchedulerSpec, CancelMidWindowIgnoresItsTokens) {
  SchedulerHarness h(SpecOptions(), 64, PrefixCacheMode::kFull);
  ASSERT_TRUE(h.Add(1, Iota(9), 40).ok());
  ASSERT_TRUE(h.Add(2, Iota(9, 50), 40).ok());
  h.Step();
  ScriptedDrafter drafter(5, 6, 6, 0.2);
  ProposeAll(*h.sched, drafter, {1, 2});
  StepPlan p = h.sched->Schedule();
  ASSERT_GT(p.sequences[0].num_draft_tokens, 0);
  std::string error;
  StepOutput out = h.runner.Run(p, &error);  // the forward pass ran, with 1's drafts
  ASSERT_TRUE(h.sched->Cancel(1).ok());
  EXPECT_TRUE(h.sched->CheckInvariants().ok());
  auto fin = h.sched->ApplyStepOutput(out);  // 1's tokens are still in the output: ignored
  ASSERT_TRUE(fin.ok()) << fin.status().ToString();
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.count(1), 0u);
  EXPECT_EQ(h.done.at(2).output_tokens, ReferenceGenerate(Iota(9, 50), 40, 128, false));
  EXPECT_EQ(h.pool.stats().num_in_use, 0);
}

struct SpecSimConfig {
  int32_t num_blocks;
  PrefixCacheMode mode;
  bool chunked;
  bool cancels;
  double p_wrong;
  uint32_t seed;
};

struct SpecSimResult {
  int64_t preemptions = 0;
  int64_t drafted = 0;
  int64_t accepted = 0;
  int64_t mid_window_cancels = 0;
  std::map<RequestId, std::vector<int32_t>> outputs;
};

// Random requests (shared prefixes, stops, priorities, tenants), drafts with random k in 1..8
// and random wrong tokens, cancellations between Schedule and ApplyStepOutput.
SpecSimResult SimulateSpec(const SpecSimConfig& c) {
  SchedulerHarness h(testing::SimSchedulerOptions(c.chunked), c.num_blocks, c.mode, /*stops=*/true);
  std::mt19937 content_rng(c.seed), rng(c.seed * 7919u + 3u);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto content = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(content_rng);
  };
  ScriptedDrafter drafter(c.seed + 1, 1, 8, c.p_wrong);
  std::vector<std::vector<int32_t>> systems;
  for (int i = 0; i < 3; ++i) systems.push_back(Iota(4 * content(2, 5), 500 + 37 * i));
  constexpr int kNumRequests = 100;
  std::vector<NewRequest> requests(kNumRequests);
  for (int i = 0; i < kNumRequests; ++i) {
    NewRequest& r = requests[static_cast<size_t>(i)];
    r.request_id = i;
    if (content(0, 1)) r.prompt = systems[static_cast<size_t>(content(0, 2))];
    for (int n = content(1, 30); n > 0; --n) r.prompt.push_back(content(0, 999));
    r.max_tokens = content(1, 50);
    r.priority = content(0, 2);
    r.tenant = content(0, 3);
    r.num_shared_prefix_tokens = content(0, 20);
  }
  std::set<RequestId> live, cancelled;
  RequestId next_id = 0;
  SpecSimResult result;
  for (int step = 0; step < 20000; ++step) {
    for (int a = uniform(0, 2); a > 0 && next_id < kNumRequests; --a) {
      if (!h.sched->AddRequest(requests[static_cast<size_t>(next_id)]).ok()) break;
      live.insert(next_id++);
    }
    if (next_id == kNumRequests && h.sched->idle()) break;
    ProposeAll(*h.sched, drafter, live);
    if (::testing::Test::HasFailure()) return result;
    StepPlan plan = h.sched->Schedule();
    EXPECT_LE(plan.num_tokens(), h.options.max_batch_tokens);
    if (!h.sched->idle()) {
      EXPECT_FALSE(plan.empty()) << "step " << step;
    }
    std::string error;
    StepOutput out = h.runner.Run(plan, &error);
    EXPECT_EQ(error, "");
    // Cancel in the middle of the window: after the forward pass, before its output is applied.
    if (c.cancels && uniform(0, 9) == 0 && !plan.sequences.empty()) {
      const ScheduledSequence& victim = plan.sequences[static_cast<size_t>(
          uniform(0, static_cast<int>(plan.sequences.size()) - 1))];
      EXPECT_TRUE(h.sched->Cancel(victim.request_id).ok());
      cancelled.insert(victim.request_id);
      live.erase(victim.request_id);
      result.mid_window_cancels += victim.num_draft_tokens > 0 ? 1 : 0;
    }
    auto fin = h.sched->ApplyStepOutput(out);
    EXPECT_TRUE(fin.ok()) << fin.status().ToString();
    if (!fin.ok()) return result;
    for (FinishedRequest& f : *fin) {
      live.erase(f.request_id);
      h.done[f.request_id] = std::move(f);
    }
    const Status inv = h.sched->CheckInvariants();
    EXPECT_TRUE(inv.ok()) << inv.ToString();
    if (::testing::Test::HasFailure()) return result;
  }
  EXPECT_EQ(next_id, kNumRequests);
  EXPECT_TRUE(h.sched->idle());
  for (RequestId id = 0; id < kNumRequests; ++id) {
    const bool fin = h.done.count(id) > 0;
    EXPECT_NE(fin, cancelled.count(id) > 0) << "request " << id;
    if (!fin) continue;
    const NewRequest& r = requests[static_cast<size_t>(id)];
    EXPECT_EQ(h.done.at(id).output_tokens,
              ReferenceGenerate(r.prompt, r.max_tokens, h.options.max_model_len, true))
        << "request " << id;
    result.outputs[id] = h.done.at(id).output_tokens;
  }
  // No leaks: every reference is back (cached blocks may stay, unreferenced).
  const BlockPoolStats st = h.pool.stats();
  EXPECT_EQ(st.num_in_use, 0);
  EXPECT_EQ(st.num_free + st.num_evictable, c.num_blocks);
  if (c.mode == PrefixCacheMode::kOff) {
    EXPECT_EQ(st.num_free, c.num_blocks);
  }
  EXPECT_EQ(h.sched->kv().num_sequences(), 0);
  const SchedulerStats s = h.sched->stats();
  result.preemptions = s.num_preemptions;
  result.drafted = s.num_draft_tokens;
  result.accepted = s.num_accepted_draft_tokens;
  return result;
}

class SchedulerSpecSim : public ::testing::TestWithParam<SpecSimConfig> {};

TEST_P(SchedulerSpecSim, StreamsEqualPlainDecoding) {
  const SpecSimConfig& c = GetParam();
  const SpecSimResult r = SimulateSpec(c);
  std::printf(
      "blocks=%d mode=%d chunked=%d cancels=%d: drafted %lld accepted %lld "
      "preemptions %lld mid-window cancels %lld\n",
      c.num_blocks, static_cast<int>(c.mode), c.chunked, c.cancels,
      static_cast<long long>(r.drafted), static_cast<long long>(r.accepted),
      static_cast<long long>(r.preemptions), static_cast<long long>(r.mid_window_cancels));
  EXPECT_GT(r.drafted, 0);
  EXPECT_GT(r.accepted, 0);
  EXPECT_LT(r.accepted, r.drafted);  // some drafts were rejected
  if (c.num_blocks <= 24) {
    EXPECT_GT(r.preemptions, 0);
  }
  if (c.cancels) {
    EXPECT_GT(r.mid_window_cancels, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Configs, SchedulerSpecSim,
    ::testing::Values(SpecSimConfig{400, PrefixCacheMode::kOff, true, false, 0.2, 1},
                      SpecSimConfig{400, PrefixCacheMode::kFull, true, true, 0.3, 2},
                      SpecSimConfig{60, PrefixCacheMode::kShared, true, true, 0.1, 3},
                      SpecSimConfig{24, PrefixCacheMode::kOff, true, true, 0.2, 4},
                      SpecSimConfig{24, PrefixCacheMode::kFull, true, true, 0.5, 5},
                      SpecSimConfig{24, PrefixCacheMode::kShared, false, true, 0.2, 6},
                      SpecSimConfig{40, PrefixCacheMode::kFull, false, false, 0.05, 7}),
    [](const ::testing::TestParamInfo<SpecSimConfig>& info) {
      const SpecSimConfig& c = info.param;
      const char* mode = c.mode == PrefixCacheMode::kOff      ? "off"
                         : c.mode == PrefixCacheMode::kShared ? "shared"
                                                              : "full";
      return "blocks" + std::to_string(c.num_blocks) + "_" + mode +
             (c.chunked ? "_chunked" : "_whole") + (c.cancels ? "_cancels" : "");
    });

// Same workload without drafts and with drafts (no cancels): identical outputs, fewer steps.
TEST(SchedulerSpecCompare, DraftsChangeNothingButTheStepCount) {
  const SpecSimResult exact = SimulateSpec({400, PrefixCacheMode::kShared, true, false, 0.0, 9});
  const SpecSimResult noisy = SimulateSpec({24, PrefixCacheMode::kShared, true, false, 0.4, 9});
  EXPECT_EQ(exact.outputs.size(), 100u);
  EXPECT_EQ(exact.outputs, noisy.outputs);
  // Right drafts are rejected only after a stop token.
  EXPECT_GT(exact.accepted, exact.drafted * 9 / 10);
  EXPECT_LT(noisy.accepted, noisy.drafted * 9 / 10);
  EXPECT_GT(noisy.preemptions, 0);
}

}  // namespace
}  // namespace jisu
