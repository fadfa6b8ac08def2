// Small pieces shared by the subcommands: resolving -m, reading -p/-f, peak memory, JSON out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend_factory.h"
#include "jisu/request_options.h"
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

// Debugging overrides (docs/OPTIONS.md): environment variables read here, at the CLI edge,
// into the options they default; nothing below the CLI reads the environment.

// Help text of --matmul (parsed by MatmulFromFlag).
inline constexpr const char* kMatmulFlagHelp =
    "CPU matmul path of requests that leave it at auto: auto (measured per step shape), float "
    "(float activations: what transformers computes) or int8 (int8 activations everywhere); "
    "default: $JISU_MATMUL, else auto";
// --matmul's value; when it is "auto", JISU_MATMUL's (float, int8 or int; unset: auto).
Result<MatmulPath> MatmulFromFlag(const std::string& flag);
// Help text of --sampling (SamplingPlacement).
inline constexpr const char* kSamplingFlagHelp =
    "where tokens of requests that leave it at auto are drawn: auto or device (on the GPU where "
    "the row allows) or host";
// The engine defaults of --matmul and --sampling (their environment overrides included), and the
// backend options that follow from them (the CPU weights laid out for the default path) or that
// the environment overrides (ApplyEnvOverrides).
Status ApplyOptionFlags(const std::string& matmul, const std::string& sampling,
                        RequestOptions* defaults, BackendOptions* backend);

// False when JISU_INTERLEAVE=0|off: no load-time repacking of CPU weights.
bool InterleaveFromEnv();
// Fills the backend options the environment overrides: JISU_INTERLEAVE=0|off (no load-time
// repacking of CPU weights), JISU_SAMPLER=reference (CUDA: the reference sampler for every
// launch), JISU_GEMV_PDL=0 (CUDA: GEMVs without programmatic dependent launch).
void ApplyEnvOverrides(BackendOptions* options);

}  // namespace jisu::cli
