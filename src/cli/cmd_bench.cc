// `jisu bench`: llama-bench-style throughput. pp = one prompt of -p tokens through the batched
// forward pass (chunks of --batch), tg = -n single-token decode steps after a 1-token prompt.
// Each repeated -r times after one untimed warm-up; median and standard deviation of tokens/s.
// The machine may be shared: besides wall time, each run's process CPU time is measured, and
// tokens / (CPU seconds / threads) is printed as the uncontended estimate (what the threads
// would give if they never waited for a core; spin-waiting in the pool counts as work, so it
// is a slight underestimate on an idle machine).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "kv/kv_cache.h"
#include "runner/generator.h"

namespace jisu::cli {
namespace {

struct BenchFlags {
  std::string model;
  int64_t prompt_tokens = 512;
  int64_t gen_tokens = 128;
  int64_t batch = 512;
  int threads = 0;
  int reps = 3;
  std::string kv_type = "f16";
  std::string matmul = "auto";
  bool json = false;
};

struct Stats {
  double mean = 0, median = 0, stddev = 0;
};

Stats Summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= v.size();
  for (double x : v) s.stddev += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(s.stddev / (v.size() - 1)) : 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.median = n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return s;
}

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

Status RunBench(const BenchFlags& f) {
  JISU_ASSIGN_OR_RETURN(int threads, ThreadsFromFlag(f.threads));
  if (f.prompt_tokens < 0 || f.gen_tokens < 0 || f.reps <= 0 || f.batch <= 0) {
    return Status::InvalidArgument("-p, -n must be >= 0; -r and --batch must be > 0");
  }
  JISU_ASSIGN_OR_RETURN(KvType kv_type, ParseKvType(f.kv_type));
  JISU_ASSIGN_OR_RETURN(auto model, LoadModelFlag(f.model));
  ThreadPool pool(threads);
  GeneratorOptions options;
  options.kv_type = kv_type;
  JISU_ASSIGN_OR_RETURN(options.matmul, MatmulFromFlag(f.matmul));
  options.interleave = InterleaveFromEnv();
  options.max_context = std::max<int64_t>(f.prompt_tokens, f.gen_tokens + 1) + 1;
  options.prefill_chunk = f.batch;
  if (options.max_context > model->config().max_position) {
    return Status::OutOfRange("-p/-n exceed the model's context");
  }
  JISU_ASSIGN_OR_RETURN(auto generator, Generator::Create(*model, pool, options));
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> token(
      0, static_cast<int32_t>(model->config().vocab_size) - 1);

  std::vector<double> pp, tg, pp_cpu, tg_cpu;
  // One untimed warm-up of each (page in the weights, size the scratch buffers).
  for (int rep = -1; rep < f.reps; ++rep) {
    if (f.prompt_tokens > 0) {
      std::vector<int32_t> ids(f.prompt_tokens);
      for (auto& id : ids) id = token(rng);
      const int64_t last = f.prompt_tokens - 1;
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = ProcessCpuSeconds();
      JISU_ASSIGN_OR_RETURN(auto logits, generator->PromptLogits(ids, std::span(&last, 1)));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double cpu = ProcessCpuSeconds() - c0;
      if (rep >= 0) {
        pp.push_back(f.prompt_tokens / s);
        pp_cpu.push_back(f.prompt_tokens / (cpu / threads));
      }
    }
    if (f.gen_tokens > 0) {
      SamplingParams params;
      params.temperature = 0;
      params.ignore_eos = true;
      params.max_tokens = static_cast<int32_t>(f.gen_tokens + 1);
      const int32_t first = token(rng);
      const double c0 = ProcessCpuSeconds();
      JISU_ASSIGN_OR_RETURN(auto r, generator->Generate(std::span(&first, 1), params));
      const double cpu = ProcessCpuSeconds() - c0;  // includes the 1-token prompt
      if (rep >= 0) {
        tg.push_back(f.gen_tokens / r.timings.decode_seconds);
        tg_cpu.push_back((f.gen_tokens + 1) / (cpu / threads));
      }
    }
  }
  const Stats pps = Summarize(pp), tgs = Summarize(tg);
  const Stats ppc = Summarize(pp_cpu), tgc = Summarize(tg_cpu);
  const uint64_t rss = PeakRssBytes();
  if (f.json) {
    nlohmann::json out = {{"model", model->path()},
                          {"weight_type", model->weight_type()},
                          {"threads", threads},
                          {"n_prompt", f.prompt_tokens},
                          {"n_gen", f.gen_tokens},
                          {"reps", f.reps},
                          {"pp_tokens_per_s", pps.median},
                          {"pp_stddev", pps.stddev},
                          {"tg_tokens_per_s", tgs.median},
                          {"tg_stddev", tgs.stddev},
                          {"pp_mean", pps.mean},
                          {"tg_mean", tgs.mean},
                          {"pp_cpu_estimate", ppc.median},
                          {"tg_cpu_estimate", tgc.median},
                          {"peak_rss_bytes", rss}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("| model | type | threads | test | tokens/s |\n|---|---|---|---|---|\n");
    if (f.prompt_tokens > 0) {
      std::printf("| %s | %s | %d | pp%lld | %.2f ± %.2f |\n", model->path().c_str(),
                  model->weight_type().c_str(), threads, static_cast<long long>(f.prompt_tokens),
                  pps.median, pps.stddev);
    }
    if (f.gen_tokens > 0) {
      std::printf("| %s | %s | %d | tg%lld | %.2f ± %.2f |\n", model->path().c_str(),
                  model->weight_type().c_str(), threads, static_cast<long long>(f.gen_tokens),
                  tgs.median, tgs.stddev);
    }
    std::printf("uncontended estimate (tokens / (process CPU s / threads)):");
    if (f.prompt_tokens > 0) std::printf(" pp %.2f tok/s", ppc.median);
    if (f.gen_tokens > 0) std::printf(" tg %.2f tok/s", tgc.median);
    std::printf("\n");
    std::printf("peak RSS: %s\n", FormatBytes(rss).c_str());
  }
  return Status::Ok();
}

}  // namespace

void RegisterBench(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  auto* cmd = app.add_subcommand("bench", "Prompt-processing and decode throughput");
  cmd->add_option("-m,--model", flags->model, "HF model folder or .gguf file");
  cmd->add_option("-p,--n-prompt", flags->prompt_tokens, "prompt tokens (0 = skip)");
  cmd->add_option("-n,--n-gen", flags->gen_tokens, "generated tokens (0 = skip)");
  cmd->add_option("-b,--batch", flags->batch, "prompt tokens per forward pass");
  cmd->add_option("-t,--threads", flags->threads, "threads (0 = all)");
  cmd->add_option("--kv-type", flags->kv_type, kKvTypeHelp);
  cmd->add_option("--matmul", flags->matmul, kMatmulFlagHelp);
  cmd->add_option("-r,--repetitions", flags->reps, "repetitions");
  cmd->add_flag("--json", flags->json, "print one JSON object");
  cmd->callback([flags] { ReportStatus(RunBench(*flags)); });
}

}  // namespace jisu::cli
