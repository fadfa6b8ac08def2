// The OpenAI HTTP API as plain data: request bodies of /v1/chat/completions and /v1/completions
// parsed and validated into a GenerationRequest (no model needed), and the JSON shapes of
// responses, streamed chunks and errors. Unknown request fields are ignored, as OpenAI and
// vLLM do; a field of the wrong type or out of range is an ApiError naming it.
// jisu's own request options travel in one vendor object, "jisu" (docs/OPTIONS.md):
//   "jisu": {"matmul": "auto|float|int8", "sampling": "auto|device|host",
//            "attention": "auto|dense", "weights": "", "speculative": 0..64}
// parsed strictly: an unknown key inside it, a wrong type or an unknown name is a 400. null or
// absent means auto. Its "grammar" and "regex" keys, response_format and the other
// structured-output spellings are parsed by structured_output_request.h. What depends on the
// serving engine (a weight set it holds, a path its backend has, a drafter) is checked after
// parsing (Engine::CheckOptions).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "jisu/request_options.h"
#include "sampling/sampler.h"
#include "server/tools/tool_request.h"

namespace jisu::server {

// An error answer: HTTP status and OpenAI's {"error": {message, type, param, code}}.
struct ApiError {
  int http_status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // empty = null
  std::string code;   // empty = null

  static ApiError BadRequest(std::string message, std::string param = "");
  static ApiError NotFound(std::string message, std::string param = "");
  nlohmann::json ToJson() const;
};

enum class Endpoint { kChat, kCompletion };

// One prompt of /v1/completions: text, or token ids given by the client.
struct PromptInput {
  std::string text;
  std::vector<int32_t> tokens;
  bool is_tokens = false;
};

struct GenerationRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;                 // may be empty: the served model
  nlohmann::ordered_json messages;   // chat: the validated message list
  std::vector<PromptInput> prompts;  // completions: one or more prompts
  SamplingParams sampling;           // max_tokens < 0 means "not given"
  int32_t n = 1;                     // choices per prompt
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool echo = false;           // completions: prepend the prompt text
  int32_t top_logprobs = -1;   // -1 = no logprobs; else alternatives per token
  std::string user;
  int64_t max_tokens_given = -1;  // -1 = absent
  RequestOptions options;         // the "jisu" object
  ToolRequest tools;              // chat: tools, tool_choice, parallel_tool_calls
  // The field sampling.structured came from ("response_format", "guided_json", ...), for the
  // 400 when it does not compile (structured_output_request.h); empty when unconstrained.
  std::string constraint_param;
};

inline constexpr int32_t kMaxN = 16;
inline constexpr int32_t kMaxTopLogprobs = 20;
inline constexpr size_t kMaxPrompts = 64;

// Parses a request body. Returns the error to answer with, if any.
std::optional<ApiError> ParseGenerationRequest(const std::string& body, Endpoint endpoint,
                                               GenerationRequest* out);

// The 400 for a bad "jisu" option: `status` from RequestOptions::Validate or
// Engine::CheckOptions, whose message starts with the field's name.
ApiError OptionError(const Status& status);

// Usage block: prompt/completion/total tokens and prompt_tokens_details.cached_tokens.
nlohmann::json UsageJson(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens);

// Byte values of a token's text (OpenAI's "bytes" field).
nlohmann::json BytesJson(const std::string& s);

// Token text safe to put in JSON: invalid UTF-8 (a byte-level piece of a character) is
// replaced by U+FFFD, as OpenAI does for such tokens.
std::string ValidUtf8(const std::string& s);

// Constant-time comparison of the Authorization header: true when
// header == "Bearer " + key. Time depends only on the lengths.
bool BearerMatches(const std::string& header, const std::string& key);

}  // namespace jisu::server
