// Randomized simulations of the scheduler against the fake model runner: many requests with
// random lengths, arrivals, priorities, tenants, shared prefixes and cancellations, under pools
// from roomy to tiny (forcing preemption), every prefix-cache mode and chunking on/off. Each step
// checks the plan limits and the invariants (pool refs == block-table entries); at the end every
// request is accounted for and each finished one produced exactly the reference tokens.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "sched/scheduler_test_harness.h"

namespace jisu {
namespace {

using testing::ReferenceGenerate;
using testing::SchedulerHarness;

struct SimConfig {
  int32_t num_blocks;
  PrefixCacheMode mode;
  bool chunked;
  bool cancels;
  uint32_t seed;
};

struct SimResult {
  int64_t preemptions = 0;
  int64_t finished = 0;
  int64_t cancelled = 0;
  int64_t hit_tokens = 0;
  std::map<RequestId, std::vector<int32_t>> outputs;
};

SimResult Simulate(const SimConfig& c) {
  SchedulerHarness h(testing::SimSchedulerOptions(c.chunked), c.num_blocks, c.mode, /*stops=*/true);
  // Two streams: request contents (so request i is the same whatever the pool does) and the
  // timing of arrivals and cancels.
  std::mt19937 content_rng(c.seed), rng(c.seed * 7919u + 1u);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto content = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(content_rng);
  };

  // Three shared "system prompts" of 2-5 blocks.
  std::vector<std::vector<int32_t>> systems;
  for (int i = 0; i < 3; ++i) systems.push_back(testing::Iota(4 * content(2, 5), 500 + 37 * i));

  constexpr int kNumRequests = 120;
  std::vector<NewRequest> requests(kNumRequests);
  for (int i = 0; i < kNumRequests; ++i) {
    NewRequest& r = requests[static_cast<size_t>(i)];
    r.request_id = i;
    if (content(0, 1)) r.prompt = systems[static_cast<size_t>(content(0, 2))];
    for (int n = content(1, 30); n > 0; --n) r.prompt.push_back(content(0, 999));
    r.max_tokens = content(1, 40);
    r.priority = content(0, 2);
    r.tenant = content(0, 3);
    r.num_shared_prefix_tokens = content(0, 20);
  }
  std::map<RequestId, std::pair<std::vector<int32_t>, int64_t>> submitted;  // prompt, max_tokens
  std::set<RequestId> cancelled;
  RequestId next_id = 0;
  SimResult result;
  for (int step = 0; step < 20000; ++step) {
    // Arrivals in bursts; one refused by the bounded queue is offered again next step.
    for (int a = uniform(0, 2); a > 0 && next_id < kNumRequests; --a) {
      const NewRequest& r = requests[static_cast<size_t>(next_id)];
      const Status s = h.sched->AddRequest(r);
      if (s.ok()) {
        submitted[next_id] = {r.prompt, r.max_tokens};
        ++next_id;
      } else {
        EXPECT_EQ(s.code(), Status::Code::kResourceExhausted) << s.ToString();
        break;
      }
    }
    if (c.cancels && !submitted.empty() && uniform(0, 19) == 0) {
      const RequestId victim = uniform(0, static_cast<int>(next_id) - 1);
      if (h.sched->Find(victim)) {
        EXPECT_TRUE(h.sched->Cancel(victim).ok());
        cancelled.insert(victim);
      }
    }
    if (next_id == kNumRequests && h.sched->idle()) break;
    StepPlan p = h.Step();
    if (::testing::Test::HasFailure()) return result;
    if (!h.sched->idle()) {
      EXPECT_FALSE(p.empty()) << "live requests but nothing scheduled at step " << step;
    }
  }
  EXPECT_EQ(next_id, kNumRequests);
  EXPECT_TRUE(h.sched->idle());
  // No request lost: each one finished or was cancelled, never both.
  for (const auto& [id, pm] : submitted) {
    const bool fin = h.done.count(id) > 0;
    EXPECT_NE(fin, cancelled.count(id) > 0) << "request " << id;
    if (!fin) continue;
    EXPECT_EQ(h.done.at(id).output_tokens,
              ReferenceGenerate(pm.first, pm.second, h.options.max_model_len, true))
        << "request " << id;
    result.outputs[id] = h.done.at(id).output_tokens;
  }
  EXPECT_EQ(h.pool.stats().num_in_use, 0);
  result.preemptions = h.sched->stats().num_preemptions;
  result.finished = static_cast<int64_t>(h.done.size());
  result.cancelled = static_cast<int64_t>(cancelled.size());
  result.hit_tokens = h.cache.stats().total.hit_tokens;
  return result;
}

class SchedulerSim : public ::testing::TestWithParam<SimConfig> {};

TEST_P(SchedulerSim, AllRequestsCompleteWithReferenceTokens) {
  const SimResult r = Simulate(GetParam());
  EXPECT_GT(r.finished, 0);
  RecordProperty("preemptions", static_cast<int>(r.preemptions));
  std::printf(
      "blocks=%d mode=%d chunked=%d cancels=%d: finished %lld cancelled %lld "
      "preemptions %lld prefix-hit tokens %lld\n",
      GetParam().num_blocks, static_cast<int>(GetParam().mode), GetParam().chunked,
      GetParam().cancels, static_cast<long long>(r.finished), static_cast<long long>(r.cancelled),
      static_cast<long long>(r.preemptions), static_cast<long long>(r.hit_tokens));
  // 24 blocks = one max_model_len sequence: preemption must happen and be survived.
  if (GetParam().num_blocks <= 24) {
    EXPECT_GT(r.preemptions, 0);
  }
  if (GetParam().num_blocks >= 400) {
    EXPECT_EQ(r.preemptions, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, SchedulerSim,
                         ::testing::Values(SimConfig{400, PrefixCacheMode::kOff, true, false, 1},
                                           SimConfig{400, PrefixCacheMode::kFull, true, true, 2},
                                           SimConfig{60, PrefixCacheMode::kShared, true, true, 3},
                                           SimConfig{24, PrefixCacheMode::kOff, true, false, 4},
                                           SimConfig{24, PrefixCacheMode::kFull, true, true, 5},
                                           SimConfig{24, PrefixCacheMode::kShared, false, true, 6},
                                           SimConfig{40, PrefixCacheMode::kFull, false, false, 7}),
                         [](const ::testing::TestParamInfo<SimConfig>& info) {
                           const SimConfig& c = info.param;
                           const char* mode = c.mode == PrefixCacheMode::kOff      ? "off"
                                              : c.mode == PrefixCacheMode::kShared ? "shared"
                                                                                   : "full";
                           return "blocks" + std::to_string(c.num_blocks) + "_" + mode +
                                  (c.chunked ? "_chunked" : "_whole") +
                                  (c.cancels ? "_cancels" : "");
                         });

// The same workload (no cancels) with a tiny pool and a large one gives identical outputs.
TEST(SchedulerSimCompare, TinyPoolMatchesLargePool) {
  const SimResult large = Simulate({400, PrefixCacheMode::kShared, true, false, 11});
  const SimResult tiny = Simulate({24, PrefixCacheMode::kShared, true, false, 11});
  EXPECT_EQ(large.preemptions, 0);
  EXPECT_GT(tiny.preemptions, 0);
  EXPECT_EQ(tiny.outputs, large.outputs);
  EXPECT_EQ(tiny.finished, 120);
}

}  // namespace
}  // namespace jisu
