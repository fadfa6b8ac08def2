// What differs between /v1/chat/completions and /v1/completions inside the one generation flow
// of generation_handler.cc, as an EndpointShape per endpoint: how the request's prompt becomes
// tokens (chat template and shared system prefix, or text / token ids with echo), how a
// sampled token's logprobs are recorded (chat's content entries, or the completion's four
// parallel arrays), and the JSON shapes of a finished choice and of a streamed delta. Also the
// per-prompt and per-choice state both endpoints accumulate. Used by generation_handler.cc only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "jisu/status.h"
#include "server/generation_handler.h"
#include "server/openai_protocol.h"
#include "server/tools/tool_output.h"
#include "tokenizer/tokenizer.h"

namespace jisu::server {

// One prompt of a request, tokenized.
struct PreparedPrompt {
  std::vector<int32_t> tokens;
  int64_t num_shared_prefix = 0;
  std::string echo_text;
};

// What a streamed choice with parsed tool calls sends next: content, or the call
// Choice::tool_calls[call_index].
struct ToolDelta {
  std::string content;
  int call_index = -1;
};

// One choice (an engine request) as its outputs arrive.
struct Choice {
  RequestId id = 0;
  size_t prompt_index = 0;
  std::string text;
  int64_t num_tokens = 0;
  int64_t num_prompt_tokens = 0;
  int64_t num_cached_tokens = 0;
  FinishReason finish_reason = FinishReason::kNone;  // named only in the response
  Status error;
  bool done = false;
  bool started = false;     // streaming: the choice's first chunk was sent
  nlohmann::json logprobs;  // EndpointShape::EmptyLogprobs, then every token's
  int64_t text_offset = 0;  // completions: the next token's offset in the text
  // Chat with tool calls parsed (null otherwise): `text` is then the content outside calls,
  // tool_calls the message's calls so far, tool_deltas what a stream has not sent yet.
  std::unique_ptr<ToolOutputDecoder> tools;
  nlohmann::json tool_calls = nlohmann::json::array();
  std::vector<ToolDelta> tool_deltas;
  // tool_choice named the function: OpenAI's finish_reason is then "stop", not "tool_calls".
  bool named_tool = false;
};

// A finished choice's finish_reason: OpenAI's "tool_calls" when the model stopped after
// calling tools, unless tool_choice named the function (OpenAI and vLLM answer "stop" there).
const char* ChoiceFinishName(const Choice& c);

class EndpointShape {
 public:
  virtual ~EndpointShape() = default;

  // The response id's prefix, and the "object" of a response and of a streamed chunk.
  virtual const char* id_prefix() const = 0;
  virtual const char* object() const = 0;
  virtual const char* chunk_object() const = 0;

  // Tokenizes the request's prompt(s) into `out`; the context-length check is the caller's,
  // which names prompt_param() (the request field the prompt came from) in its error.
  virtual std::optional<ApiError> BuildPrompts(const GenerationRequest& g,
                                               const GenerationContext& ctx,
                                               std::vector<PreparedPrompt>* out) const = 0;
  virtual const char* prompt_param() const = 0;
  // max_tokens when the request gives none, with `room` tokens left in the context.
  virtual int64_t DefaultMaxTokens(int64_t room) const = 0;

  // A new choice's Choice::logprobs.
  virtual nlohmann::json EmptyLogprobs() const = 0;
  // Records one sampled token's logprobs in `c` and, when `delta` is given, in the streamed
  // chunk's logprobs (null until the first token's).
  virtual void AddLogprobs(const Tokenizer& tok, const SampledLogprobs& lp, Choice* c,
                           nlohmann::json* delta) const = 0;

  // A finished choice's text and logprobs (null unless requested) into `ch`.
  virtual void FillChoice(const Choice& c, bool with_logprobs, nlohmann::json* ch) const = 0;

  // Streaming. The delta a choice's stream opens with (null: none); the key of a chunk's
  // choice that holds its delta; a delta holding `text`, and one holding nothing (a finish
  // without text); a chunk's logprobs from the delta AddLogprobs filled.
  virtual nlohmann::json OpeningDelta() const = 0;
  virtual const char* delta_key() const = 0;
  virtual nlohmann::json TextDelta(const std::string& text) const = 0;
  virtual nlohmann::json EmptyDelta() const = 0;
  virtual nlohmann::json ChunkLogprobs(nlohmann::json delta) const = 0;
};

const EndpointShape& ShapeOf(Endpoint endpoint);

// Chat messages (and the request's tools, null for none) through the served template, as
// /v1/chat/completions renders them; /tokenize counts the same text. ctx.chat_template must not
// be null. A template that raises is a 400 naming "messages".
std::optional<ApiError> RenderChat(const nlohmann::ordered_json& messages,
                                   const nlohmann::ordered_json& tools,
                                   const GenerationContext& ctx, bool add_generation_prompt,
                                   std::string* text);

}  // namespace jisu::server
