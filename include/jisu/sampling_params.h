// The sampling parameters of one request (public: include/jisu). Defaults follow the OpenAI API;
// each field says what turns it off. Validate() names the first bad field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jisu/status.h"

namespace jisu {

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  // 0 or -1 = disabled (-1 as vLLM spells it). Validate rejects other negative values; Sampler
  // treats any value <= 0 as disabled and values >= vocab_size as "keep all".
  int32_t top_k = 0;
  float top_p = 1.0f;               // 1 = disabled
  float min_p = 0.0f;               // 0 = disabled
  float repetition_penalty = 1.0f;  // HF/CTRL style: divide positive logits, multiply negative
  float frequency_penalty = 0.0f;   // OpenAI style, counts of generated tokens
  float presence_penalty = 0.0f;    // OpenAI style
  std::optional<uint64_t> seed;     // none = nondeterministic
  int32_t max_tokens = 256;
  std::vector<std::string> stop;  // stop strings
  bool ignore_eos = false;

  static constexpr size_t kMaxStopStrings = 16;
  static constexpr size_t kMaxStopBytes = 1024;

  // Names the first invalid field (e.g. "temperature must be >= 0").
  Status Validate() const;
};

}  // namespace jisu
