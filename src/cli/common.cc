#include "cli/common.h"

#include <sys/resource.h>

#include <cstdio>
#include <thread>

#include "chat/chat_template.h"
#include "core/mapped_file.h"
#include "model/dummy_model.h"

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

}  // namespace jisu::cli
