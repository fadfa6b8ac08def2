// Token sampling from logits, and stop-string detection for streamed text.
// The order of transforms follows Hugging Face / vLLM conventions:
//   penalties (repetition, frequency, presence) -> greedy if temperature == 0
//   -> temperature -> top-k -> top-p -> min-p -> draw.
// A Sampler owns its random state: the same seed and the same logits give the same tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jisu/status.h"

namespace jisu {

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  int32_t top_k = 0;         // 0 or <0 = disabled
  float top_p = 1.0f;        // 1 = disabled
  float min_p = 0.0f;        // 0 = disabled
  float repetition_penalty = 1.0f;  // HF/CTRL style: divide positive logits, multiply negative
  float frequency_penalty = 0.0f;   // OpenAI style, counts of generated tokens
  float presence_penalty = 0.0f;    // OpenAI style
  std::optional<uint64_t> seed;     // none = nondeterministic
  int32_t max_tokens = 256;
  std::vector<std::string> stop;    // stop strings
  bool ignore_eos = false;

  // Names the first invalid field (e.g. "temperature must be >= 0").
  Status Validate() const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // Picks a token from logits[vocab_size]. `prompt_ids` and `generated_ids` feed the penalties
  // (repetition over both, as Hugging Face does; frequency/presence over generated only, as
  // OpenAI does). `logits` is modified (scratch).
  int32_t Sample(float* logits, int32_t vocab_size, std::span<const int32_t> prompt_ids,
                 std::span<const int32_t> generated_ids);

  // log-softmax of the (unmodified) logits, for logprob reporting.
  static void LogSoftmax(const float* logits, int32_t vocab_size, float* out);

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;  // reused scratch
  std::vector<int32_t> counts_scratch_;
};

// Finds stop strings in streamed text. Push() returns the text that is safe to emit now:
// text that could still be the start of a stop string is held back until it is resolved.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  struct Output {
    std::string text;      // safe to emit
    bool stopped = false;  // a stop string was found; text ends right before it
  };
  Output Push(std::string_view delta);
  std::string Flush();  // at end of generation: releases held-back text

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace jisu
