// What a chat request asks about tools, once validated (tool_fields.h reads it from the
// request): the function definitions the chat template renders, whether and which calls the
// model may or must make, and whether it may make several at once.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace jisu::server {

enum class ToolChoice {
  kNone,      // the model must not call a tool: its output is text
  kAuto,      // it may call tools: calls are parsed out of its output
  kRequired,  // it must call at least one tool
  kFunction,  // it must call ToolRequest::function_name
};

struct ToolRequest {
  // The validated `tools` array as the client sent it (the template's `tools` variable);
  // null when the request has none.
  nlohmann::ordered_json tools;
  ToolChoice choice = ToolChoice::kNone;  // OpenAI's default: "auto" with tools, else "none"
  std::string function_name;              // kFunction
  bool parallel = true;                   // parallel_tool_calls: false keeps the first call

  // Whether tool calls are parsed out of the output.
  bool parses_calls() const { return !tools.is_null() && choice != ToolChoice::kNone; }
};

inline constexpr size_t kMaxTools = 128;         // as OpenAI
inline constexpr size_t kMaxToolNameBytes = 64;  // [a-zA-Z0-9_-]{1,64}, as OpenAI

}  // namespace jisu::server
