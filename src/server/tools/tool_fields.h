// The tool fields of an OpenAI chat request, validated at the edge: `tools` (function
// definitions the chat template renders), `tool_choice` and `parallel_tool_calls`, and the tool
// parts of messages (an assistant's `tool_calls`, a tool message's `tool_call_id`). Every
// error is a 400 naming the field. Owns the OpenAI JSON shapes of tool definitions and of tool
// calls in requests; tool_call_parser.h owns the calls found in the model's output.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>

#include "server/openai_protocol.h"
#include "server/tools/tool_call_format.h"
#include "server/tools/tool_request.h"

namespace jisu::server {

// Reads `tools`, `tool_choice` and `parallel_tool_calls` of a chat request body.
std::optional<ApiError> ParseToolRequest(const nlohmann::ordered_json& body, ToolRequest* out);

// Validates the tool fields of message `index` (`msg`, an object with a valid role) and writes
// them into `copy`, the message the chat template sees: an assistant's tool_calls (each
// {id, type: "function", function: {name, arguments}}), whose `arguments` JSON text becomes the
// object it encodes (templates print it with tojson, as vLLM passes it), and a tool message's
// tool_call_id (required).
std::optional<ApiError> ParseMessageToolFields(const nlohmann::ordered_json& msg, size_t index,
                                               nlohmann::ordered_json* copy);

// Whether the server can honour the request's tool fields with the served model, whose
// template writes calls in `format`; never silently: parsing calls (tool_choice auto, required
// or a named function) needs a known format.
std::optional<ApiError> CheckToolsServable(const ToolRequest& tools, ToolCallFormat format);

}  // namespace jisu::server
