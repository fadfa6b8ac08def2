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

#include "backend/backend_factory.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "engine/engine.h"

namespace jisu::cli {
namespace {

struct BenchEngineFlags {
  std::string model;
  std::string concurrency = "1,8,32";
  int64_t prompt_tokens = 128;
  int64_t gen_tokens = 64;
  int64_t shared_prefix = 1000;
  std::string kv_memory = "1GiB";
  std::string device = "cpu";
  int threads = 0;
  bool json = false;
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
        if (o.finish_reason == "error") failure = o.error;
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

Status RunBenchEngine(const BenchEngineFlags& f) {
  JISU_ASSIGN_OR_RETURN(int threads, ThreadsFromFlag(f.threads));
  JISU_ASSIGN_OR_RETURN(KvMemory kv_memory, KvMemory::Parse(f.kv_memory));
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
  BackendOptions backend_options;
  backend_options.device = f.device;
  backend_options.kv_memory = kv_memory;
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
  std::printf("| concurrency | requests | output tok/s | mean TTFT ms |\n|---|---|---|---|\n");
  for (int level : levels) {
    std::vector<EngineRequest> reqs(static_cast<size_t>(level), base);
    for (auto& r : reqs) r.prompt = random_prompt(f.prompt_tokens);
    std::vector<double> ttft;
    int64_t generated = 0;
    JISU_ASSIGN_OR_RETURN(double seconds, RunAll(*engine, reqs, &ttft, &generated));
    double mean_ttft = 0;
    for (double t : ttft) mean_ttft += t / ttft.size();
    std::printf("| %d | %d | %.1f | %.1f |\n", level, level, generated / seconds, mean_ttft * 1e3);
    out["throughput"].push_back({{"concurrency", level},
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
  cmd->add_option("--device", flags->device, "auto, cpu, cuda or cuda:N");
  cmd->add_option("-t,--threads", flags->threads, "threads (0 = all)");
  cmd->add_flag("--json", flags->json, "also print one JSON object");
  cmd->callback([flags] { ReportStatus(RunBenchEngine(*flags)); });
}

}  // namespace jisu::cli
