// Deterministic studies of the scheduler and the block pool (no model): KV capacity of paged vs
// pre-allocated KV on a mixed workload, and the scheduler's own cost per step. Run by
// `jisu bench-engine --sched-study`; figures in bench/results/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jisu {

// One class of the mixed workload: prompt and output lengths drawn uniformly in [min, max].
struct WorkloadClass {
  std::string name;
  double weight = 1;
  int64_t prompt_min = 0, prompt_max = 0;
  int64_t output_min = 0, output_max = 0;
};

// chat 50% (prompt 100-1000, output 50-500), summarization 25% (prompt 1000-3000, output
// 50-300), code 25% (prompt 200-1500, output 100-800).
std::vector<WorkloadClass> DefaultMixedWorkload();

struct CapacityStudyOptions {
  std::vector<WorkloadClass> workload = DefaultMixedWorkload();
  int64_t num_requests = 2000;  // all queued at t = 0: the pool is the only limit
  int64_t num_blocks = 16384;   // the fixed KV budget
  int64_t block_size = 16;
  int64_t max_model_len = 4096;
  // max_tokens the client declares (generation stops earlier, at the drawn output length, as an
  // EOS would); 0: unset, i.e. max_model_len - prompt (what a server assumes without one).
  int64_t declared_max_tokens = 0;
  int64_t max_batch_tokens = 8192;
  int64_t max_seqs = 4096;
  bool kv_prealloc = false;
  uint64_t seed = 1;
};

struct CapacityStudyResult {
  int64_t peak_running = 0;
  double mean_running = 0;  // over the saturated steps (some request waiting)
  int64_t steps = 0;
  int64_t saturated_steps = 0;
  int64_t preemptions = 0;
  double mean_kv_usage = 0;       // over the saturated steps
  double mean_fragmentation = 0;  // over the saturated steps
  int64_t generated_tokens = 0;
};

CapacityStudyResult RunCapacityStudy(const CapacityStudyOptions& options);

// Time of Scheduler::Schedule and ApplyStepOutput per decode step with `num_seqs` running
// sequences of `prompt_tokens`-token prompts (block 16, prefix cache `shared`).
struct SchedulerStepTiming {
  double schedule_us = 0;
  double apply_us = 0;
  double fragmentation = 0;
};
SchedulerStepTiming BenchSchedulerStep(int num_seqs, int prompt_tokens, int steps);

}  // namespace jisu
