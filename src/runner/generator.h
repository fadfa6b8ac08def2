// Single-sequence CPU generation on top of the batched forward pass: prefill the prompt in
// chunks, then decode token by token. Tokens and text come from the same OutputProcessor the
// engine uses (sampling, EOS, stop strings, detokenizing). What `jisu bench`, perplexity and the
// golden tests drive; `jisu generate` and the server go through the Engine instead.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/cpu_weights.h"
#include "backend/cpu/transformer.h"
#include "core/thread_pool.h"
#include "jisu/finish_reason.h"
#include "jisu/status.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "sampling/sampler.h"

namespace jisu {

struct GeneratorOptions {
  int64_t max_context = 0;      // 0: the model's context length (capped at 8192 for memory)
  int64_t prefill_chunk = 512;  // tokens per forward call while ingesting the prompt
  int64_t kv_block_size = 16;
  KvType kv_type = kDefaultKvType;
  MatmulPath matmul = MatmulPath::kAuto;  // every step's matmul path (and the load layout's)
  bool interleave = true;                 // load-time repacking (CpuWeightsOptions)
};

struct GenerationTimings {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  double prompt_seconds = 0;  // prefill, up to and including the first sampled token's logits
  double decode_seconds = 0;  // the remaining forward passes
  double PromptTokensPerSecond() const;
  double DecodeTokensPerSecond() const;
};

struct GenerationResult {
  std::vector<int32_t> output_ids;
  std::string text;
  FinishReason finish_reason = FinishReason::kNone;  // kStop (EOS, stop string) or kLength
  GenerationTimings timings;
};

class Generator {
 public:
  static Result<std::unique_ptr<Generator>> Create(const Model& model, ThreadPool& pool,
                                                   const GeneratorOptions& options = {});

  int64_t max_context() const { return max_context_; }

  // on_text (optional) receives text deltas as they are produced; returning false stops.
  Result<GenerationResult> Generate(std::span<const int32_t> prompt_ids,
                                    const SamplingParams& params,
                                    const std::function<bool(std::string_view)>& on_text = {});

  // Runs the prompt through the model (positions from 0) and returns logits of the listed
  // positions (each row vocab_size floats). For golden tests and perplexity.
  Result<std::vector<float>> PromptLogits(std::span<const int32_t> prompt_ids,
                                          std::span<const int64_t> positions);

 private:
  Generator(const Model& model, ThreadPool& pool, const GeneratorOptions& options);
  // Feeds `ids` at positions start_position.. through the model and writes the logits of
  // `rows` (indices into `ids`) to `logits`.
  Status Feed(std::span<const int32_t> ids, int64_t start_position, std::span<const int64_t> rows,
              float* logits);

  const Model& model_;
  GeneratorOptions options_;
  int64_t max_context_ = 0;
  CpuWeights weights_;
  Transformer transformer_;
  std::unique_ptr<KvCache> cache_;
  std::vector<int32_t> block_table_;
  std::vector<float> logits_;
};

}  // namespace jisu
