// Test harness: a pool, an optional prefix cache, a scheduler and the fake model runner, stepped
// together, with the per-step checks every scheduler test wants.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "kv/block_pool.h"
#include "kv/prefix_cache.h"
#include "sched/fake_model_runner_test_util.h"
#include "sched/scheduler.h"

namespace jisu::testing {

class SchedulerHarness {
 public:
  SchedulerHarness(const SchedulerOptions& options, int32_t num_blocks, PrefixCacheMode mode,
                   bool stops = false)
      : options(options),
        pool(num_blocks, static_cast<int32_t>(options.block_size)),
        cache(&pool, mode),
        runner(&pool, stops) {
    const Status s = Scheduler::ValidateFor(options, pool);
    EXPECT_TRUE(s.ok()) << s.ToString();
    sched = std::make_unique<Scheduler>(options, &pool, &cache);
  }

  Status Add(RequestId id, std::vector<int32_t> prompt, int64_t max_tokens, int32_t priority = 0,
             TenantId tenant = 0, std::string salt = "") {
    NewRequest r;
    r.request_id = id;
    r.prompt = std::move(prompt);
    r.max_tokens = max_tokens;
    r.priority = priority;
    r.tenant = tenant;
    r.cache_salt = std::move(salt);
    return sched->AddRequest(std::move(r));
  }
  Status AddWithOptions(RequestId id, std::vector<int32_t> prompt, int64_t max_tokens,
                        const RequestOptions& options) {
    NewRequest r;
    r.request_id = id;
    r.prompt = std::move(prompt);
    r.max_tokens = max_tokens;
    r.options = options;
    return sched->AddRequest(std::move(r));
  }

  // One full step; checks the plan's limits, the runner's contract and the invariants.
  StepPlan Step() {
    StepPlan plan = sched->Schedule();
    EXPECT_LE(plan.num_tokens(), options.max_batch_tokens);
    EXPECT_LE(static_cast<int64_t>(plan.sequences.size()), options.max_seqs);
    std::string error;
    StepOutput out = runner.Run(plan, &error);
    EXPECT_EQ(error, "");
    auto finished = sched->ApplyStepOutput(out);
    EXPECT_TRUE(finished.ok()) << finished.status().ToString();
    if (finished.ok()) {
      for (FinishedRequest& f : *finished) done[f.request_id] = std::move(f);
    }
    const Status inv = sched->CheckInvariants();
    EXPECT_TRUE(inv.ok()) << inv.ToString();
    ++steps;
    return plan;
  }

  // Steps until idle; false if max_steps is reached first.
  bool RunAll(int max_steps = 100000) {
    for (int i = 0; i < max_steps && !sched->idle(); ++i) {
      Step();
      if (::testing::Test::HasFailure()) return false;
    }
    return sched->idle();
  }

  SchedulerOptions options;
  BlockPool pool;
  PrefixCache cache;
  FakeModelRunner runner;
  std::unique_ptr<Scheduler> sched;
  std::map<RequestId, FinishedRequest> done;
  int64_t steps = 0;
};

// The small, busy scheduler of the randomized simulations (scheduler_sim_test.cc,
// scheduler_spec_test.cc): 4-token blocks, a 96-token context, six sequences, a short queue.
inline SchedulerOptions SimSchedulerOptions(bool chunked) {
  SchedulerOptions o;
  o.block_size = 4;
  o.max_model_len = 96;
  o.chunked_prefill = chunked;
  o.max_batch_tokens = chunked ? 40 : 96;
  o.max_chunk_tokens = chunked ? 24 : 0;
  o.max_seqs = 6;
  o.max_queue = 10;
  return o;
}

inline std::vector<int32_t> Iota(int32_t n, int32_t first = 1) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = first + i;
  return v;
}

}  // namespace jisu::testing
