// `jisu bench-engine`: the serving engine on one model, in process (no HTTP): output tokens/s
// at several concurrencies (continuous batching), and time to first token for a request whose
// long shared prefix is cold vs already in the prefix cache.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "backend/backend_factory.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "engine/engine.h"
#include "kv/kv_cache.h"
#include "sched/sched_study.h"

namespace jisu::cli {
namespace {

struct BenchEngineFlags {
  std::string model;
  std::string concurrency = "1,8,32";
  int64_t prompt_tokens = 128;
  int64_t gen_tokens = 64;
  int64_t shared_prefix = 1000;
  std::string kv_memory = "1GiB";
  std::string kv_type = "f16";
  std::string matmul = "auto";
  std::string sampling = "auto";
  std::string device = "cpu";
  int threads = 0;
  bool json = false;
  double batch_window_ms = 0;
  bool kv_prealloc = false;
  bool print_metrics = false;
  bool sched_study = false;
  int64_t study_kv_blocks = 16384;
  int study_seqs = 256;
};

// Runs `requests` to completion; returns wall seconds and fills per-request TTFTs.
Result<double> RunAll(Engine& engine, const std::vector<EngineRequest>& requests,
                      std::vector<double>* ttft, int64_t* generated) {
  std::mutex mu;
  std::condition_variable cv;
  size_t done = 0;
  Status failure;
  ttft->assign(requests.size(), 0);
  *generated = 0;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < requests.size(); ++i) {
    auto id = engine.Submit(requests[i], [&, i](const EngineOutput& o) {
      std::lock_guard<std::mutex> lock(mu);
      *generated += static_cast<int64_t>(o.token_ids.size());
      if (!o.token_ids.empty() && (*ttft)[i] == 0) (*ttft)[i] = o.ttft_seconds;
      if (o.finished) {
        if (o.finish_reason == FinishReason::kError) failure = o.error;
        ++done;
        cv.notify_all();
      }
    });
    if (!id.ok()) return id.status();
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done == requests.size(); });
  if (!failure.ok()) return failure;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The value of sample `series` in a Prometheus text exposition (0 if absent).
double MetricSample(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const std::string all = "\n" + text;
  const size_t at = all.find(key);
  return at == std::string::npos ? 0 : std::strtod(all.c_str() + at + key.size(), nullptr);
}

// --sched-study: (1) max concurrent sequences at a fixed KV budget, paged vs pre-allocated, on
// the mixed workload (scheduler + block pool, no model: deterministic); (2) scheduler time per
// step at `seqs` sequences alone; (3) scheduler time vs step time in the engine on the model
// with `seqs` decoding sequences (from the engine's metrics).
Status RunSchedStudy(const BenchEngineFlags& f, Engine& engine, const ModelConfig& c,
                     nlohmann::json* out) {
  std::printf(
      "KV capacity at %lld blocks of 16 (%lld token slots), 2000 requests queued at "
      "once, max_model_len 4096; workload:",
      static_cast<long long>(f.study_kv_blocks), static_cast<long long>(f.study_kv_blocks * 16));
  for (const WorkloadClass& w : DefaultMixedWorkload()) {
    std::printf(" %s %.0f%% (prompt %lld-%lld, output %lld-%lld)", w.name.c_str(), w.weight * 100,
                static_cast<long long>(w.prompt_min), static_cast<long long>(w.prompt_max),
                static_cast<long long>(w.output_min), static_cast<long long>(w.output_max));
  }
  std::printf(
      "\n\n| KV allocation | declared max_tokens | peak running | mean running (saturated) "
      "| preemptions | mean KV usage | mean fragmentation | steps |\n"
      "|---|---|---|---|---|---|---|---|\n");
  struct Case {
    const char* name;
    bool prealloc;
    int64_t declared;
  };
  double paged_mean = 0;
  for (const Case& k : {Case{"paged", false, 0}, Case{"pre-allocated", true, 0},
                        Case{"pre-allocated", true, 1024}}) {
    CapacityStudyOptions o;
    o.num_blocks = f.study_kv_blocks;
    o.kv_prealloc = k.prealloc;
    o.declared_max_tokens = k.declared;
    const auto t0 = std::chrono::steady_clock::now();
    const CapacityStudyResult r = RunCapacityStudy(o);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!k.prealloc) paged_mean = r.mean_running;
    const std::string declared =
        k.declared ? std::to_string(k.declared) : std::string("unset (max_model_len - prompt)");
    std::printf("| %s | %s | %lld | %.1f | %lld | %.3f | %.3f | %lld |\n", k.name, declared.c_str(),
                static_cast<long long>(r.peak_running), r.mean_running,
                static_cast<long long>(r.preemptions), r.mean_kv_usage, r.mean_fragmentation,
                static_cast<long long>(r.steps));
    if (k.prealloc) {
      std::printf("|   paged / this | | | %.2fx | | | | |\n", paged_mean / r.mean_running);
    }
    (*out)["capacity"].push_back({{"allocation", k.name},
                                  {"declared_max_tokens", k.declared},
                                  {"peak_running", r.peak_running},
                                  {"mean_running", r.mean_running},
                                  {"preemptions", r.preemptions},
                                  {"mean_kv_usage", r.mean_kv_usage},
                                  {"mean_fragmentation", r.mean_fragmentation},
                                  {"steps", r.steps},
                                  {"sim_seconds", secs}});
  }

  const SchedulerStepTiming t = BenchSchedulerStep(f.study_seqs, 512, 500);
  std::printf(
      "\nScheduler alone, %d decoding sequences (prompt 512, block 16): Schedule %.1f "
      "us/step, ApplyStepOutput %.1f us/step\n",
      f.study_seqs, t.schedule_us, t.apply_us);
  (*out)["scheduler_alone"] = {
      {"seqs", f.study_seqs}, {"schedule_us", t.schedule_us}, {"apply_us", t.apply_us}};

  // In the engine: all sequences decoding together; compare over the steps in between.
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(c.vocab_size) - 1);
  std::vector<EngineRequest> reqs(static_cast<size_t>(f.study_seqs));
  for (auto& r : reqs) {
    r.prompt.resize(static_cast<size_t>(f.prompt_tokens));
    for (auto& id : r.prompt) id = token(rng);
    r.sampling.temperature = 0;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = static_cast<int32_t>(f.gen_tokens);
  }
  std::vector<double> ttft;
  int64_t generated = 0;
  Result<double> wall = Status::Ok();
  std::thread runner([&] { wall = RunAll(engine, reqs, &ttft, &generated); });
  struct Snap {
    double steps, step_s, sched_s;
  };
  auto snap = [&] {
    const std::string m = engine.MetricsText();
    return Snap{MetricSample(m, "jisu:engine_steps_total"),
                MetricSample(m, "jisu:step_duration_seconds_sum"),
                MetricSample(m, "jisu:scheduler_duration_seconds_sum")};
  };
  // Wait for the first step that decodes every sequence, then measure until the last ones.
  Snap a{}, b{};
  bool measured = false;
  for (;;) {
    const SchedulerStats s = engine.scheduler_stats();
    if (!measured && s.num_running == f.study_seqs && s.num_waiting == 0 &&
        s.last_step_seqs == f.study_seqs && s.last_step_tokens == f.study_seqs) {
      a = snap();
      measured = true;
    }
    if (measured && s.last_step_seqs == f.study_seqs &&
        snap().steps >= a.steps + static_cast<double>(f.gen_tokens) / 2) {
      b = snap();
      break;
    }
    if (s.num_running == 0 && s.num_finished >= f.study_seqs) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  runner.join();
  JISU_RETURN_IF_ERROR(wall.status());
  if (b.steps > a.steps) {
    const double n = b.steps - a.steps;
    const double step_ms = (b.step_s - a.step_s) / n * 1e3;
    const double sched_ms = (b.sched_s - a.sched_s) / n * 1e3;
    std::printf(
        "Engine, %d decoding sequences (prompt %lld), %.0f steps: step %.2f ms, "
        "scheduler %.3f ms = %.3f%% of the step\n",
        f.study_seqs, static_cast<long long>(f.prompt_tokens), n, step_ms, sched_ms,
        100 * sched_ms / step_ms);
    (*out)["engine_decode"] = {
        {"seqs", f.study_seqs}, {"steps", n}, {"step_ms", step_ms}, {"scheduler_ms", sched_ms}};
  } else {
    std::printf("Engine: no window with every sequence decoding was observed\n");
  }
  return Status::Ok();
}

Status RunBenchEngine(const BenchEngineFlags& f) {
  JISU_ASSIGN_OR_RETURN(int threads, ThreadsFromFlag(f.threads));
  JISU_ASSIGN_OR_RETURN(KvMemory kv_memory, KvMemory::Parse(f.kv_memory));
  JISU_ASSIGN_OR_RETURN(KvType kv_type, ParseKvType(f.kv_type));
  std::vector<int> levels;
  {
    std::stringstream ss(f.concurrency);
    for (std::string item; std::getline(ss, item, ',');) {
      const int c = std::atoi(item.c_str());
      if (c <= 0 || c > 4096) return Status::InvalidArgument("--concurrency: bad level " + item);
      levels.push_back(c);
    }
  }
  if (f.prompt_tokens <= 0 || f.gen_tokens <= 0 || f.shared_prefix < 0) {
    return Status::InvalidArgument("--prompt-tokens and -n must be positive");
  }
  JISU_ASSIGN_OR_RETURN(auto model, LoadModelFlag(f.model));
  const ModelConfig& c = model->config();
  EngineOptions options;
  options.num_threads = threads;
  options.scheduler.block_size = 16;
  options.scheduler.max_model_len = std::min<int64_t>(
      c.max_position, std::max(f.prompt_tokens, f.shared_prefix + 16) + f.gen_tokens + 1);
  options.scheduler.max_batch_tokens = 512;
  options.scheduler.kv_prealloc = f.kv_prealloc;
  options.batch_window_ms = f.batch_window_ms;
  if (f.sched_study) {
    if (f.study_seqs < 1 || f.study_seqs > 4096 || f.study_kv_blocks < 256) {
      return Status::InvalidArgument("--study-seqs must be in [1, 4096], --study-kv-blocks >= 256");
    }
    options.scheduler.max_seqs = f.study_seqs;
    options.scheduler.max_queue = f.study_seqs;
  }
  BackendOptions backend_options;
  JISU_RETURN_IF_ERROR(ApplyOptionFlags(f.matmul, f.sampling, &options.defaults, &backend_options));
  backend_options.device = f.device;
  backend_options.kv_memory = kv_memory;
  backend_options.kv_type = kv_type;
  backend_options.block_size = options.scheduler.block_size;
  backend_options.num_threads = threads;
  JISU_ASSIGN_OR_RETURN(auto backend, CreateBackend(*model, backend_options));
  const int64_t kv_blocks = backend->num_kv_blocks();
  std::fprintf(stderr, "backend: %s, %lld KV blocks\n", backend->description().c_str(),
               static_cast<long long>(kv_blocks));
  JISU_ASSIGN_OR_RETURN(auto engine, Engine::Create(*model, options, std::move(backend)));

  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(c.vocab_size) - 1);
  auto random_prompt = [&](int64_t n) {
    std::vector<int32_t> p(static_cast<size_t>(n));
    for (auto& t : p) t = token(rng);
    return p;
  };
  EngineRequest base;
  base.sampling.temperature = 0;
  base.sampling.ignore_eos = true;
  base.sampling.max_tokens = static_cast<int32_t>(f.gen_tokens);

  nlohmann::json out;
  out["model"] = model->path();
  out["threads"] = threads;
  out["kv_blocks"] = kv_blocks;
  out["backend"] = engine->backend().description();
  if (f.sched_study) {
    JISU_RETURN_IF_ERROR(RunSchedStudy(f, *engine, c, &out));
    if (f.print_metrics) std::printf("\n%s", engine->MetricsText().c_str());
    if (f.json) std::printf("%s\n", out.dump().c_str());
    return Status::Ok();
  }
  std::printf("| concurrency | requests | output tok/s | mean TTFT ms |\n|---|---|---|---|\n");
  for (int level : levels) {
    // Warm-up at this level, not reported: the first steps of a new batch shape cost more
    // (CPU: c=1 TTFT 38-48 ms cold vs 10 ms warm, SmolLM2-135M, Zen 4; CUDA: c=8 TTFT 62-74 ms
    // when only c=32 had run before, H200), which skewed the levels' ratios.
    {
      std::vector<EngineRequest> warm(static_cast<size_t>(level), base);
      for (auto& r : warm) {
        r.prompt = random_prompt(f.prompt_tokens);
        r.sampling.max_tokens = 2;
      }
      std::vector<double> ignored_ttft;
      int64_t ignored_tokens = 0;
      JISU_RETURN_IF_ERROR(RunAll(*engine, warm, &ignored_ttft, &ignored_tokens).status());
    }
    std::vector<EngineRequest> reqs(static_cast<size_t>(level), base);
    for (auto& r : reqs) r.prompt = random_prompt(f.prompt_tokens);
    std::vector<double> ttft;
    int64_t generated = 0;
    JISU_ASSIGN_OR_RETURN(double seconds, RunAll(*engine, reqs, &ttft, &generated));
    double mean_ttft = 0;
    for (double t : ttft) mean_ttft += t / ttft.size();
    std::printf("| %d | %d | %.1f | %.1f |\n", level, level, generated / seconds, mean_ttft * 1e3);
    out["throughput"].push_back({{"concurrency", level},
                                 {"output_tokens", generated},
                                 {"output_tokens_per_s", generated / seconds},
                                 {"mean_ttft_s", mean_ttft}});
  }
  if (f.shared_prefix > 0) {
    const std::vector<int32_t> prefix = random_prompt(f.shared_prefix);
    auto with_suffix = [&] {
      EngineRequest r = base;
      r.prompt = prefix;
      const auto tail = random_prompt(16);
      r.prompt.insert(r.prompt.end(), tail.begin(), tail.end());
      r.num_shared_prefix_tokens = f.shared_prefix;
      r.sampling.max_tokens = 1;
      return r;
    };
    std::vector<double> cold, warm;
    int64_t generated = 0;
    JISU_RETURN_IF_ERROR(RunAll(*engine, {with_suffix()}, &cold, &generated).status());
    JISU_RETURN_IF_ERROR(RunAll(*engine, {with_suffix()}, &warm, &generated).status());
    std::printf("\nTTFT with a %lld-token shared prefix: cold %.1f ms, warm %.1f ms (%.1fx)\n",
                static_cast<long long>(f.shared_prefix), cold[0] * 1e3, warm[0] * 1e3,
                cold[0] / warm[0]);
    out["ttft_shared_prefix"] = {
        {"prefix_tokens", f.shared_prefix}, {"cold_s", cold[0]}, {"warm_s", warm[0]}};
  }
  if (f.print_metrics) std::printf("\n%s", engine->MetricsText().c_str());
  if (f.json) std::printf("%s\n", out.dump().c_str());
  return Status::Ok();
}

}  // namespace

void RegisterBenchEngine(CLI::App& app) {
  auto flags = std::make_shared<BenchEngineFlags>();
  auto* cmd = app.add_subcommand("bench-engine", "Serving-engine throughput and prefix-cache TTFT");
  cmd->add_option("-m,--model", flags->model, "HF model folder or .gguf file");
  cmd->add_option("-c,--concurrency", flags->concurrency, "comma-separated levels");
  cmd->add_option("-p,--prompt-tokens", flags->prompt_tokens, "prompt tokens per request");
  cmd->add_option("-n,--n-gen", flags->gen_tokens, "generated tokens per request");
  cmd->add_option("--shared-prefix", flags->shared_prefix,
                  "shared prefix for the TTFT test (0 = skip)");
  cmd->add_option("--kv-memory", flags->kv_memory,
                  "KV pool: a size (512MiB, 2GiB) or a fraction of free memory (0.9)");
  cmd->add_option("--kv-type", flags->kv_type, kKvTypeHelp);
  cmd->add_option("--matmul", flags->matmul, kMatmulFlagHelp);
  cmd->add_option("--sampling", flags->sampling, kSamplingFlagHelp);
  cmd->add_option("--device", flags->device, "auto, cpu, cuda or cuda:N");
  cmd->add_option("-t,--threads", flags->threads, "threads (0 = all)");
  cmd->add_flag("--json", flags->json, "also print one JSON object");
  cmd->add_option("--batch-window-ms", flags->batch_window_ms,
                  "when idle, wait this long to gather arrivals before the first step");
  cmd->add_flag("--kv-prealloc", flags->kv_prealloc,
                "reserve max-length KV per request at admission (comparison only)");
  cmd->add_flag("--print-metrics", flags->print_metrics,
                "print the engine's Prometheus metrics at the end");
  cmd->add_flag("--sched-study", flags->sched_study,
                "KV capacity paged vs pre-allocated, and scheduler cost per step (instead of the "
                "throughput runs)");
  cmd->add_option("--study-kv-blocks", flags->study_kv_blocks,
                  "KV budget in blocks of 16 for the capacity study");
  cmd->add_option("--study-seqs", flags->study_seqs, "sequences for the scheduler-cost study");
  cmd->callback([flags] { ReportStatus(RunBenchEngine(*flags)); });
}

}  // namespace jisu::cli
