// The sampling parameters of one request (public: include/jisu). Defaults follow the OpenAI API;
// each field says what turns it off. Validate() names the first bad field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jisu/status.h"

namespace jisu {

// A constraint on the generated text (structured output): what is generated is forced to match
// it, token by token (src/grammar/). The engine compiles it once per request at Submit (cached
// per model) and refuses a bad one there with InvalidArgument naming the problem.
struct StructuredOutput {
  enum class Kind : uint8_t {
    kNone,        // unconstrained
    kJsonObject,  // any JSON object (OpenAI's response_format json_object); `text` unused
    kJsonSchema,  // `text`: a JSON Schema; the output is JSON valid against it
    kGrammar,     // `text`: a GBNF grammar (llama.cpp's syntax), starting at rule `root`
    kRegex,       // `text`: a regular expression the whole output matches
  };
  Kind kind = Kind::kNone;
  std::string text;
  // kJsonSchema: additionalProperties absent means no other keys (OpenAI's strict: true).
  bool strict = false;
  // Special tokens, by their text, that the output may contain as the token itself where the
  // constraint expects that text (e.g. Mistral's "[TOOL_CALLS]" in a tool-call grammar); other
  // special tokens are never allowed. A name the vocabulary holds as no special token is
  // matched as plain text.
  std::vector<std::string> special_tokens;

  static constexpr size_t kMaxTextBytes = 1 << 20;
  static constexpr size_t kMaxSpecialTokens = 16;
  static constexpr size_t kMaxSpecialTokenBytes = 256;
  bool enabled() const { return kind != Kind::kNone; }
};

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
  // OpenAI's logit_bias: (token id, bias in [-100, 100]) added to the logit before everything
  // else (penalties, temperature, filters). Ids must be below the model's vocabulary size
  // (Engine::Submit checks).
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Structured output; kNone = unconstrained.
  StructuredOutput structured;

  static constexpr size_t kMaxStopStrings = 16;
  static constexpr size_t kMaxStopBytes = 1024;
  static constexpr size_t kMaxLogitBias = 1024;

  // Names the first invalid field (e.g. "temperature must be >= 0").
  Status Validate() const;
};

}  // namespace jisu
