// `jisu serve`: the OpenAI-compatible HTTP server. Listens first (so /health answers 503 while
// the model loads), then loads the model, builds the backend and engine and turns ready.
// SIGTERM/SIGINT drain: stop accepting, let in-flight requests finish up to --drain-timeout,
// cancel the rest, exit 0.
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "backend/backend_factory.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "engine/engine.h"
#include "kv/kv_cache.h"
#include "server/http_server.h"

namespace jisu::cli {
namespace {

struct ServeFlags {
  std::string model;
  std::string chat_template;
  std::string tool_call_parser = "auto";
  std::string served_model_name;
  server::ServerOptions http;
  std::string kv_memory = "0.5";
  std::string kv_type = "f16";
  std::string device = "auto";
  std::string prefix_cache = "shared";
  int threads = 0;
  int64_t max_model_len = 0;  // 0 = the model's context, capped at 8192
  int64_t max_batch_tokens = 2048;
  int64_t max_seqs = 256;
  int64_t max_queue = 1024;
  int64_t block_size = 16;
  double batch_window_ms = 0;
  bool host_sampling = false;
  std::string matmul = "auto";
  std::string sampling = "auto";
  bool kv_prealloc = false;
  double drain_timeout = 30;
};

std::string ModelName(const ServeFlags& f, const Model& model) {
  if (!f.served_model_name.empty()) return f.served_model_name;
  std::filesystem::path p(model.path());
  if (p.filename().empty()) p = p.parent_path();  // "models/tiny-llama/"
  return p.filename().string();
}

// cpp-httplib (as Debian builds it) waits with select(): keep every descriptor below FD_SETSIZE
// so too many clients get refused at accept() instead of corrupting memory.
void CapOpenFiles() {
  struct rlimit lim {};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  if (lim.rlim_cur > FD_SETSIZE) {
    lim.rlim_cur = FD_SETSIZE;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

Status RunServe(const ServeFlags& f) {
  JISU_ASSIGN_OR_RETURN(int threads, ThreadsFromFlag(f.threads));
  JISU_ASSIGN_OR_RETURN(KvMemory kv_memory, KvMemory::Parse(f.kv_memory));
  JISU_ASSIGN_OR_RETURN(KvType kv_type, ParseKvType(f.kv_type));
  JISU_ASSIGN_OR_RETURN(PrefixCacheMode prefix_mode, ParsePrefixCacheMode(f.prefix_cache));
  if (f.max_model_len < 0) return Status::InvalidArgument("--max-model-len must be >= 0");
  if (!(f.drain_timeout >= 0)) return Status::InvalidArgument("--drain-timeout must be >= 0");
  LoadOptions load_options;
  JISU_ASSIGN_OR_RETURN(load_options.chat_template, ChatTemplateFromFlag(f.chat_template));
  const auto tool_format = server::ToolCallFormatFromName(f.tool_call_parser);
  if (f.tool_call_parser != "auto" && !tool_format) {
    return Status::InvalidArgument(
        "--tool-call-parser must be auto, hermes, llama3_json, mistral "
        "or none (got '" +
        f.tool_call_parser + "')");
  }
  CapOpenFiles();

  // Signals go to one waiting thread; every other thread (engine, HTTP pool) inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  server::HttpServer http(f.http);
  JISU_RETURN_IF_ERROR(http.Start());
  std::fprintf(stderr, "listening on %s://%s:%d (loading the model)\n",
               http.tls() ? "https" : "http", f.http.host.c_str(), http.port());

  JISU_ASSIGN_OR_RETURN(auto model, LoadModelFlag(f.model, load_options));
  const ModelConfig& c = model->config();
  EngineOptions options;
  options.num_threads = threads;
  options.prefix_cache = prefix_mode;
  options.scheduler.block_size = f.block_size;
  options.scheduler.max_model_len =
      f.max_model_len > 0 ? f.max_model_len : std::min<int64_t>(c.max_position, 8192);
  options.scheduler.max_batch_tokens = f.max_batch_tokens;
  options.scheduler.max_seqs = f.max_seqs;
  options.scheduler.max_queue = f.max_queue;
  options.scheduler.kv_prealloc = f.kv_prealloc;
  options.batch_window_ms = f.batch_window_ms;
  BackendOptions backend_options;
  JISU_RETURN_IF_ERROR(ApplyOptionFlags(f.matmul, f.host_sampling ? "host" : f.sampling,
                                        &options.defaults, &backend_options));
  backend_options.device = f.device;
  backend_options.kv_memory = kv_memory;
  backend_options.kv_type = kv_type;
  backend_options.block_size = f.block_size;
  backend_options.num_threads = threads;
  JISU_ASSIGN_OR_RETURN(auto backend, CreateBackend(*model, backend_options));
  std::fprintf(stderr, "backend: %s, %lld KV blocks of %lld tokens\n",
               backend->description().c_str(), static_cast<long long>(backend->num_kv_blocks()),
               static_cast<long long>(f.block_size));
  JISU_ASSIGN_OR_RETURN(auto engine, Engine::Create(*model, options, std::move(backend)));

  server::ServedModel served;
  served.model = model.get();
  served.engine = engine.get();
  served.name = ModelName(f, *model);
  served.max_model_len = options.scheduler.max_model_len;
  served.kv_block_size = f.block_size;
  served.max_queue = f.max_queue;
  served.tool_call_format =
      tool_format ? *tool_format : server::DetectToolCallFormat(model->chat_template());
  JISU_RETURN_IF_ERROR(http.SetReady(served));
  std::fprintf(stderr, "ready: model '%s', context %lld tokens, tool calls: %s\n",
               served.name.c_str(), static_cast<long long>(served.max_model_len),
               std::string(server::ToolCallFormatName(served.tool_call_format)).c_str());

  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "signal %d: draining (%lld in flight, up to %.0f s)\n", sig,
               static_cast<long long>(http.num_in_flight()), f.drain_timeout);
  http.Shutdown(f.drain_timeout);
  std::fprintf(stderr, "stopped\n");
  return Status::Ok();
}

}  // namespace

void RegisterServe(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server");
  cmd->add_option("-m,--model", f->model, "HF model folder or .gguf file");
  cmd->add_option("--chat-template", f->chat_template,
                  "Jinja chat template file for /v1/chat/completions, used instead of the "
                  "model's own");
  cmd->add_option("--tool-call-parser", f->tool_call_parser,
                  "how the model writes tool calls: auto (from the chat template), hermes, "
                  "llama3_json, mistral or none");
  cmd->add_option("--served-model-name", f->served_model_name,
                  "model name in the API (default: the file or folder name)");
  cmd->add_option("--host", f->http.host, "address to listen on");
  cmd->add_option("--port", f->http.port, "port (0 = any free port)");
  cmd->add_option("--api-key", f->http.api_key,
                  "one key for every client: Authorization: Bearer <key> on /v1/* and /metrics; "
                  "the tenant stays the request's `user`");
  cmd->add_option("--api-keys", f->http.api_keys_path,
                  "keys file: one key per line with its tenant and optional limits "
                  "(KEY tenant=NAME [rpm=N] [tpm=N] [concurrency=N] [metrics]; README)");
  cmd->add_option("--prefix-cache-scope", f->http.prefix_cache_scope,
                  "auto, tenant or global: whether cached prompt blocks are reused across "
                  "tenants (global) or only within one (tenant); auto = tenant with --api-keys");
  cmd->add_option("--tls-cert", f->http.tls_cert_path, "PEM certificate (chain): serve HTTPS");
  cmd->add_option("--tls-key", f->http.tls_key_path, "PEM private key of --tls-cert");
  cmd->add_option("--max-connections", f->http.max_connections,
                  "concurrent HTTP connections served (threads)");
  cmd->add_option("--max-body-bytes", f->http.max_body_bytes,
                  "largest request body (413 beyond; default 8 MiB)");
  cmd->add_option("--max-header-bytes", f->http.max_header_bytes,
                  "largest request line plus headers (431 beyond; default 64 KiB)");
  cmd->add_option("--drain-timeout", f->drain_timeout,
                  "seconds in-flight requests get to finish on SIGTERM");
  cmd->add_option("--kv-memory", f->kv_memory,
                  "KV pool: a size (512MiB, 2GiB) or a fraction of free memory (0.9)");
  cmd->add_option("--kv-type", f->kv_type, kKvTypeHelp);
  cmd->add_option("--device", f->device, "auto, cpu, cuda or cuda:N");
  cmd->add_option("--prefix-cache", f->prefix_cache, "off, shared or full");
  cmd->add_option("-t,--threads", f->threads, "CPU threads (0 = all)");
  cmd->add_option("--max-model-len", f->max_model_len,
                  "prompt + completion tokens per request (0 = the model's, at most 8192)");
  cmd->add_option("--max-batch-tokens", f->max_batch_tokens, "tokens per engine step");
  cmd->add_option("--max-seqs", f->max_seqs, "running sequences");
  cmd->add_option("--max-queue", f->max_queue, "waiting requests before 429");
  cmd->add_option("--block-size", f->block_size, "KV block size in tokens");
  cmd->add_option("--matmul", f->matmul, kMatmulFlagHelp);
  cmd->add_option("--sampling", f->sampling, kSamplingFlagHelp);
  cmd->add_flag("--host-sampling", f->host_sampling, "the same as --sampling host");
  cmd->add_option("--batch-window-ms", f->batch_window_ms,
                  "when idle, wait this long to gather arrivals into the first step");
  cmd->add_flag("--kv-prealloc", f->kv_prealloc,
                "reserve prompt + max_tokens of KV per request at admission (comparison only)");
  cmd->callback([f] { ReportStatus(RunServe(*f)); });
}

}  // namespace jisu::cli
