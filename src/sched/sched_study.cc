#include "sched/sched_study.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <random>

#include "kv/block_pool.h"
#include "kv/prefix_cache.h"
#include "sched/scheduler.h"

namespace jisu {

std::vector<WorkloadClass> DefaultMixedWorkload() {
  return {{"chat", 0.50, 100, 1000, 50, 500},
          {"summarization", 0.25, 1000, 3000, 50, 300},
          {"code", 0.25, 200, 1500, 100, 800}};
}

CapacityStudyResult RunCapacityStudy(const CapacityStudyOptions& o) {
  SchedulerOptions so;
  so.max_batch_tokens = o.max_batch_tokens;
  so.max_seqs = o.max_seqs;
  so.max_queue = o.num_requests;
  so.block_size = o.block_size;
  so.max_model_len = o.max_model_len;
  so.kv_prealloc = o.kv_prealloc;
  BlockPool pool(static_cast<int32_t>(o.num_blocks), static_cast<int32_t>(o.block_size));
  Scheduler sched(so, &pool, nullptr);  // no prefix cache: allocation alone is compared

  std::mt19937_64 rng(o.seed);
  std::vector<double> weights;
  for (const WorkloadClass& c : o.workload) weights.push_back(c.weight);
  std::discrete_distribution<int> pick(weights.begin(), weights.end());
  std::vector<int64_t> target(static_cast<size_t>(o.num_requests));  // output length per request
  for (int64_t id = 0; id < o.num_requests; ++id) {
    const WorkloadClass& c = o.workload[static_cast<size_t>(pick(rng))];
    const int64_t prompt = std::uniform_int_distribution<int64_t>(c.prompt_min, c.prompt_max)(rng);
    const int64_t out = std::uniform_int_distribution<int64_t>(c.output_min, c.output_max)(rng);
    NewRequest r;
    r.request_id = id;
    r.prompt.assign(static_cast<size_t>(std::min(prompt, o.max_model_len - 1)), 7);
    const int64_t room = o.max_model_len - static_cast<int64_t>(r.prompt.size());
    r.max_tokens = o.declared_max_tokens > 0 ? std::min(o.declared_max_tokens, room) : room;
    target[static_cast<size_t>(id)] = std::min(out, r.max_tokens);
    const Status s = sched.AddRequest(std::move(r));
    assert(s.ok());
    (void)s;
  }

  CapacityStudyResult res;
  StepOutput out;
  while (!sched.idle()) {
    const StepPlan plan = sched.Schedule();
    out.sampled.clear();
    for (const ScheduledSequence& s : plan.sequences) {
      if (!s.needs_logits()) continue;
      const SchedRequest* r = sched.Find(s.request_id);
      const bool done = r->num_output_tokens() + 1 >= target[static_cast<size_t>(s.request_id)];
      out.sampled.push_back({s.request_id, 7, done});
    }
    const SchedulerStats st = sched.stats();  // after Schedule: this step's batch
    auto finished = sched.ApplyStepOutput(out);
    assert(finished.ok());
    (void)finished;
    res.generated_tokens += static_cast<int64_t>(out.sampled.size());
    ++res.steps;
    res.peak_running = std::max(res.peak_running, st.num_running);
    if (st.num_waiting > 0) {
      ++res.saturated_steps;
      res.mean_running += static_cast<double>(st.num_running);
      res.mean_kv_usage += st.kv_usage;
      res.mean_fragmentation += st.kv_fragmentation;
    }
  }
  if (res.saturated_steps > 0) {
    res.mean_running /= static_cast<double>(res.saturated_steps);
    res.mean_kv_usage /= static_cast<double>(res.saturated_steps);
    res.mean_fragmentation /= static_cast<double>(res.saturated_steps);
  }
  res.preemptions = sched.stats().num_preemptions;
  return res;
}

SchedulerStepTiming BenchSchedulerStep(int num_seqs, int prompt_tokens, int steps) {
  constexpr int kBlockSize = 16;
  SchedulerOptions o;
  o.max_seqs = num_seqs;
  o.max_queue = num_seqs;
  o.max_batch_tokens = 8192;
  o.block_size = kBlockSize;
  o.max_model_len = 4096;
  BlockPool pool(num_seqs * (prompt_tokens + 2 * steps + 1024) / kBlockSize, kBlockSize);
  PrefixCache cache(&pool, PrefixCacheMode::kShared);
  Scheduler sched(o, &pool, &cache);
  for (int i = 0; i < num_seqs; ++i) {
    NewRequest r;
    r.request_id = i;
    r.tenant = i % 8;
    r.max_tokens = 4096 - prompt_tokens - 1;
    for (int t = 0; t < prompt_tokens; ++t) r.prompt.push_back((i * 7919 + t) % 49152);
    const Status s = sched.AddRequest(std::move(r));
    assert(s.ok());
    (void)s;
  }
  StepOutput out;
  double schedule_ns = 0, apply_ns = 0;
  auto step = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    StepPlan p = sched.Schedule();
    const auto t1 = std::chrono::steady_clock::now();
    out.sampled.clear();
    for (const auto& s : p.sequences) {
      if (s.needs_logits()) out.sampled.push_back({s.request_id, 42, false});
    }
    const auto t2 = std::chrono::steady_clock::now();
    auto f = sched.ApplyStepOutput(out);
    assert(f.ok());
    (void)f;
    const auto t3 = std::chrono::steady_clock::now();
    schedule_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
    apply_ns += std::chrono::duration<double, std::nano>(t3 - t2).count();
  };
  // Ingest every prompt, until a step decodes all sequences.
  while (sched.num_waiting() > 0 || sched.stats().last_step_seqs < num_seqs) step();
  schedule_ns = apply_ns = 0;
  for (int i = 0; i < steps; ++i) step();
  SchedulerStepTiming t;
  t.schedule_us = schedule_ns / steps / 1e3;
  t.apply_us = apply_ns / steps / 1e3;
  t.fragmentation = sched.stats().kv_fragmentation;
  return t;
}

}  // namespace jisu
