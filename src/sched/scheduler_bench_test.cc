// Micro-benchmark, not a test: run by hand with
//   ./build/jisu_tests --gtest_also_run_disabled_tests --gtest_filter='*SchedulerBench*'
// Time of Schedule() and ApplyStepOutput() per decode step at 256 running sequences.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "kv/block_pool.h"
#include "kv/prefix_cache.h"
#include "sched/scheduler.h"

namespace jisu {
namespace {

TEST(SchedulerBench, DISABLED_StepAt256Sequences) {
  constexpr int kSeqs = 256, kPrompt = 512, kBlockSize = 16;
  SchedulerOptions o;
  o.max_seqs = kSeqs;
  o.max_queue = kSeqs;
  o.max_batch_tokens = 8192;
  o.block_size = kBlockSize;
  o.max_model_len = 4096;
  BlockPool pool(kSeqs * (kPrompt + 1024) / kBlockSize, kBlockSize);
  PrefixCache cache(&pool, PrefixCacheMode::kShared);
  Scheduler sched(o, &pool, &cache);
  for (int i = 0; i < kSeqs; ++i) {
    NewRequest r;
    r.request_id = i;
    r.tenant = i % 8;
    r.max_tokens = 3000;
    for (int t = 0; t < kPrompt; ++t) r.prompt.push_back((i * 7919 + t) % 49152);
    ASSERT_TRUE(sched.AddRequest(std::move(r)).ok());
  }
  auto step = [&](double* schedule_ns, double* apply_ns) {
    const auto t0 = std::chrono::steady_clock::now();
    StepPlan p = sched.Schedule();
    const auto t1 = std::chrono::steady_clock::now();
    StepOutput out;
    out.sampled.reserve(p.sequences.size());
    for (const auto& s : p.sequences) {
      if (s.needs_logits) out.sampled.push_back({s.request_id, 42, false});
    }
    const auto t2 = std::chrono::steady_clock::now();
    ASSERT_TRUE(sched.ApplyStepOutput(out).ok());
    const auto t3 = std::chrono::steady_clock::now();
    *schedule_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
    *apply_ns += std::chrono::duration<double, std::nano>(t3 - t2).count();
  };
  double s_ns = 0, a_ns = 0;
  while (sched.num_waiting() > 0 || sched.stats().last_step_seqs < kSeqs) step(&s_ns, &a_ns);
  ASSERT_EQ(sched.num_running(), kSeqs);
  constexpr int kSteps = 500;
  s_ns = a_ns = 0;
  for (int i = 0; i < kSteps; ++i) step(&s_ns, &a_ns);
  ASSERT_EQ(sched.num_running(), kSeqs);
  std::printf(
      "256 decoding sequences (prompt %d, block %d): Schedule %.1f us/step, "
      "ApplyStepOutput %.1f us/step, fragmentation %.3f\n",
      kPrompt, kBlockSize, s_ns / kSteps / 1e3, a_ns / kSteps / 1e3,
      sched.stats().kv_fragmentation);
}

}  // namespace
}  // namespace jisu
