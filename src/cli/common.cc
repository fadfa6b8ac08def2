#include "cli/common.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "chat/chat_template.h"
#include "core/mapped_file.h"
#include "testmodel/dummy_model.h"

namespace jisu::cli {

Result<std::unique_ptr<Model>> LoadModelFlag(const std::string& model_flag,
                                             const LoadOptions& options) {
  std::string path = model_flag;
  if (IsDummyModelSpec(path)) return LoadDummyModel(path, options);  // random weights, no file
  if (path.empty()) {
    JISU_ASSIGN_OR_RETURN(path, ResolveDefaultModel());
  }
  return Model::Load(path, options);
}

Result<std::string> ChatTemplateFromFlag(const std::string& file) {
  if (file.empty()) return std::string();
  auto source = ReadTextFile(file, 16u << 20);
  if (!source.ok()) return source.status().WithContext("--chat-template");
  // An empty file would silently mean "the model's own" downstream.
  if (source->empty()) return Status::InvalidArgument("--chat-template " + file + ": empty file");
  auto parsed = ChatTemplate::Parse(*source);
  if (!parsed.ok()) return parsed.status().WithContext("--chat-template " + file);
  return source;
}

Result<std::string> PromptFromFlags(const std::string& prompt, const std::string& file) {
  if (!prompt.empty() && !file.empty()) {
    return Status::InvalidArgument("give either -p/--prompt or -f/--file, not both");
  }
  if (!file.empty()) return ReadTextFile(file, 64u << 20);
  return prompt;
}

uint64_t PeakRssBytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024u;  // Linux reports KiB
}

std::string FormatBytes(uint64_t bytes) {
  char buf[64];
  if (bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1ull << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1ull << 20));
  }
  return buf;
}

Result<int> ThreadsFromFlag(int threads) {
  if (threads < 0 || threads > 1024) {
    return Status::InvalidArgument("--threads must be between 0 (all) and 1024");
  }
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return threads;
}

namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

Result<MatmulPath> MatmulFromFlag(const std::string& flag) {
  auto from_flag = ParseMatmulPath(flag);
  if (!from_flag.ok()) return Status::InvalidArgument("--" + from_flag.status().message());
  if (*from_flag != MatmulPath::kAuto) return *from_flag;
  const char* env = Env("JISU_MATMUL");
  if (env == nullptr) return MatmulPath::kAuto;
  if (std::strcmp(env, "int") == 0) return MatmulPath::kInt8;  // its older spelling
  auto from_env = ParseMatmulPath(env);
  if (!from_env.ok()) return Status::InvalidArgument("JISU_MATMUL: " + from_env.status().message());
  return *from_env;
}

bool InterleaveFromEnv() {
  const char* v = Env("JISU_INTERLEAVE");
  return v == nullptr || (std::strcmp(v, "0") != 0 && std::strcmp(v, "off") != 0);
}

Status ApplyOptionFlags(const std::string& matmul, const std::string& sampling,
                        RequestOptions* defaults, BackendOptions* backend) {
  JISU_ASSIGN_OR_RETURN(defaults->matmul, MatmulFromFlag(matmul));
  auto placement = ParseSamplingPlacement(sampling);
  if (!placement.ok()) return Status::InvalidArgument("--" + placement.status().message());
  defaults->sampling = *placement;
  backend->matmul = defaults->matmul;
  ApplyEnvOverrides(backend);
  return Status::Ok();
}

void ApplyEnvOverrides(BackendOptions* options) {
  options->interleave = options->interleave && InterleaveFromEnv();
  if (const char* v = Env("JISU_SAMPLER"))
    options->reference_sampler = std::strcmp(v, "reference") == 0;
  if (const char* v = Env("JISU_GEMV_PDL")) options->gemv_pdl = v[0] != '0';
}

}  // namespace jisu::cli
