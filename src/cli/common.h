// Small pieces shared by the subcommands: resolving -m, reading -p/-f, peak memory, JSON out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "jisu/status.h"
#include "model/model.h"

namespace jisu::cli {

// Loads -m (or the default model when empty) and reports which model it took on stderr.
Result<std::unique_ptr<Model>> LoadModelFlag(const std::string& model_flag,
                                             const LoadOptions& options = {});

// The contents of --chat-template FILE (empty when no file is given), read and parsed here so
// that an unreadable or broken template fails before the model loads, naming the file.
Result<std::string> ChatTemplateFromFlag(const std::string& file);

// The text of -p, or the contents of -f; exactly one must be given.
Result<std::string> PromptFromFlags(const std::string& prompt, const std::string& file);

uint64_t PeakRssBytes();
std::string FormatBytes(uint64_t bytes);

// Threads for -t: 0 means all hardware threads. Rejects negative or absurd values.
Result<int> ThreadsFromFlag(int threads);

// Help text of --kv-type (parsed by ParseKvType, kv/kv_cache.h), shared by the commands that
// build a CPU KV cache.
inline constexpr const char* kKvTypeHelp =
    "element type of the CPU KV cache: f16 (half the memory and attention traffic) or f32";

}  // namespace jisu::cli
