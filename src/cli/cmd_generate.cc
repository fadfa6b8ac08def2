// `jisu generate`: one prompt through the Engine (the same output path as the server) on the
// device --device picks, printing the text as it streams and a stats line (or --json).
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>

#include "backend/backend_factory.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "engine/engine.h"
#include "kv/kv_cache.h"
#include "runner/chat_prompt.h"
#include "runner/generator.h"  // GenerationResult, GenerationTimings

namespace jisu::cli {
namespace {

struct GenerateFlags {
  std::string model;
  std::string prompt;
  std::string file;
  std::string system;
  std::string chat_template;
  bool chat = false;
  int max_tokens = 128;
  float temperature = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int64_t seed = -1;
  int threads = 0;
  int ctx = 0;
  std::string device = "auto";
  std::string kv_type = "f16";
  std::string matmul = "auto";
  std::string sampling = "auto";
  bool ignore_eos = false;
  bool json = false;
  std::vector<std::string> stop;
};

Status RunGenerate(const GenerateFlags& f) {
  JISU_ASSIGN_OR_RETURN(std::string prompt, PromptFromFlags(f.prompt, f.file));
  JISU_ASSIGN_OR_RETURN(int threads, ThreadsFromFlag(f.threads));
  JISU_ASSIGN_OR_RETURN(KvType kv_type, ParseKvType(f.kv_type));
  if (!f.chat && (!f.chat_template.empty() || !f.system.empty())) {
    return Status::InvalidArgument("--chat-template and --system apply with --chat");
  }
  LoadOptions load_options;
  JISU_ASSIGN_OR_RETURN(load_options.chat_template, ChatTemplateFromFlag(f.chat_template));
  JISU_ASSIGN_OR_RETURN(auto model, LoadModelFlag(f.model, load_options));

  std::vector<int32_t> prompt_ids;
  if (f.chat) {
    if (model->chat_template().empty()) {
      return Status::InvalidArgument(model->path() +
                                     " has no chat template; give one with --chat-template FILE");
    }
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!f.system.empty()) messages.push_back({{"role", "system"}, {"content", f.system}});
    messages.push_back({{"role", "user"}, {"content", prompt}});
    JISU_ASSIGN_OR_RETURN(prompt_ids, TokenizeChatPrompt(*model, messages, true));
  } else {
    prompt_ids = model->tokenizer().Encode(prompt, /*add_special=*/true);
  }
  if (prompt_ids.empty()) return Status::InvalidArgument("the prompt is empty");

  SamplingParams params;
  params.temperature = f.temperature;
  params.top_k = f.top_k;
  params.top_p = f.top_p;
  params.min_p = f.min_p;
  params.repetition_penalty = f.repeat_penalty;
  params.frequency_penalty = f.frequency_penalty;
  params.presence_penalty = f.presence_penalty;
  params.max_tokens = f.max_tokens;
  params.ignore_eos = f.ignore_eos;
  params.stop = f.stop;
  params.seed = f.seed >= 0 ? static_cast<uint64_t>(f.seed) : std::random_device{}();
  JISU_RETURN_IF_ERROR(params.Validate());

  // Without --ctx, reserve KV for exactly this request (the whole context would cost e.g.
  // 377 MiB of float32 KV, 189 MiB of F16, for SmolLM2's 8192 positions).
  const int64_t max_context = std::min<int64_t>(
      model->config().max_position,
      f.ctx > 0 ? f.ctx : static_cast<int64_t>(prompt_ids.size()) + f.max_tokens + 1);
  // The engine's loop thread queues outputs; this thread prints them (declared before the
  // engine, which may still call back while it stops).
  std::mutex mu;
  std::condition_variable ready;
  std::deque<EngineOutput> outputs;
  EngineOptions options;
  options.num_threads = threads;
  options.prefix_cache = PrefixCacheMode::kOff;
  options.scheduler.max_seqs = 1;
  options.scheduler.max_model_len = max_context;
  BackendOptions backend_options;
  JISU_RETURN_IF_ERROR(ApplyOptionFlags(f.matmul, f.sampling, &options.defaults, &backend_options));
  backend_options.device = f.device;
  backend_options.kv_type = kv_type;
  backend_options.block_size = options.scheduler.block_size;
  backend_options.num_threads = threads;
  backend_options.max_kv_blocks = BlocksForTokens(max_context, options.scheduler.block_size);
  JISU_ASSIGN_OR_RETURN(auto backend, CreateBackend(*model, backend_options));
  JISU_ASSIGN_OR_RETURN(auto engine, Engine::Create(*model, options, std::move(backend)));

  GenerationResult r;
  r.timings.prompt_tokens = static_cast<int64_t>(prompt_ids.size());
  r.finish_reason = FinishReason::kLength;
  if (params.max_tokens > 0) {  // the engine needs at least one token
    EngineRequest request;
    request.prompt = prompt_ids;
    request.sampling = params;
    JISU_ASSIGN_OR_RETURN(RequestId id,
                          engine->Submit(std::move(request), [&](const EngineOutput& o) {
                            std::lock_guard<std::mutex> lock(mu);
                            outputs.push_back(o);
                            ready.notify_one();
                          }));
    (void)id;
    for (bool done = false; !done;) {
      std::deque<EngineOutput> batch;
      {
        std::unique_lock<std::mutex> lock(mu);
        ready.wait(lock, [&] { return !outputs.empty(); });
        batch.swap(outputs);
      }
      for (const EngineOutput& o : batch) {
        r.output_ids.insert(r.output_ids.end(), o.token_ids.begin(), o.token_ids.end());
        r.text += o.text;
        if (!f.json && !o.text.empty()) {
          std::fwrite(o.text.data(), 1, o.text.size(), stdout);
          std::fflush(stdout);
        }
        if (!o.token_ids.empty() && r.timings.prompt_seconds == 0) {
          r.timings.prompt_seconds = o.ttft_seconds;
        }
        if (o.finished) {
          if (o.finish_reason == FinishReason::kError) return o.error;
          r.finish_reason = o.finish_reason;
          r.timings.decode_seconds = o.elapsed_seconds - r.timings.prompt_seconds;
          done = true;
        }
      }
    }
  }
  r.timings.generated_tokens = static_cast<int64_t>(r.output_ids.size());
  const GenerationTimings& t = r.timings;
  if (f.json) {
    nlohmann::json out;
    out["prompt_ids"] = prompt_ids;
    out["output_ids"] = r.output_ids;
    out["text"] = r.text;
    out["finish_reason"] = FinishReasonName(r.finish_reason);
    out["timings"] = {{"prompt_tokens", t.prompt_tokens},
                      {"generated_tokens", t.generated_tokens},
                      {"prompt_seconds", t.prompt_seconds},
                      {"decode_seconds", t.decode_seconds},
                      {"prompt_tokens_per_s", t.PromptTokensPerSecond()},
                      {"decode_tokens_per_s", t.DecodeTokensPerSecond()},
                      {"peak_rss_bytes", PeakRssBytes()}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr,
                 "\n[jisu] model %s (%s, %s) | prompt %lld tok, %.1f tok/s | decode %lld tok, "
                 "%.1f tok/s | peak memory %s | finish: %s\n",
                 model->path().c_str(), ArchitectureName(model->config().arch),
                 model->weight_type().c_str(), static_cast<long long>(t.prompt_tokens),
                 t.PromptTokensPerSecond(), static_cast<long long>(t.generated_tokens),
                 t.DecodeTokensPerSecond(), FormatBytes(PeakRssBytes()).c_str(),
                 FinishReasonName(r.finish_reason));
  }
  return Status::Ok();
}

}  // namespace

void RegisterGenerate(CLI::App& app) {
  auto flags = std::make_shared<GenerateFlags>();
  auto* cmd = app.add_subcommand("generate", "Generate text from a prompt");
  cmd->add_option("-m,--model", flags->model,
                  "HF model folder or .gguf file (default: demo model)");
  cmd->add_option("-p,--prompt", flags->prompt, "prompt text");
  cmd->add_option("-f,--file", flags->file, "read the prompt from a file");
  cmd->add_flag("--chat", flags->chat, "wrap the prompt as a user message in the chat template");
  cmd->add_option("--system", flags->system, "system message (with --chat)");
  cmd->add_option("--chat-template", flags->chat_template,
                  "Jinja chat template file, used instead of the model's own (with --chat)");
  cmd->add_option("-n,--max-tokens", flags->max_tokens, "tokens to generate")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--temperature,--temp", flags->temperature, "0 = greedy");
  cmd->add_option("--top-k", flags->top_k, "0 = off");
  cmd->add_option("--top-p", flags->top_p, "1 = off");
  cmd->add_option("--min-p", flags->min_p, "0 = off");
  cmd->add_option("--repeat-penalty", flags->repeat_penalty, "1 = off");
  cmd->add_option("--frequency-penalty", flags->frequency_penalty);
  cmd->add_option("--presence-penalty", flags->presence_penalty);
  cmd->add_option("--stop", flags->stop, "stop string (repeatable)");
  cmd->add_option("--seed", flags->seed, "random seed (-1 = random)");
  cmd->add_option("-t,--threads", flags->threads, "CPU threads (0 = all)");
  cmd->add_option("--device", flags->device, "auto, cpu, cuda or cuda:N");
  cmd->add_option("--kv-type", flags->kv_type, kKvTypeHelp);
  cmd->add_option("--matmul", flags->matmul, kMatmulFlagHelp);
  cmd->add_option("--sampling", flags->sampling, kSamplingFlagHelp);
  cmd->add_option("-c,--ctx", flags->ctx, "context length (0 = prompt + max tokens)");
  cmd->add_flag("--ignore-eos", flags->ignore_eos, "do not stop at end-of-sequence tokens");
  cmd->add_flag("--json", flags->json, "print one JSON object with ids, text and timings");
  cmd->callback([flags] { ReportStatus(RunGenerate(*flags)); });
}

}  // namespace jisu::cli
