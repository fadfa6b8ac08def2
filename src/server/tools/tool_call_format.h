// How a model family writes tool calls in its output, recognized from its chat template (the
// template renders past calls the way the model was trained to write them):
//   hermes       <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, repeated for
//                parallel calls (Hermes 2 Pro / 3, Qwen2.5, Qwen3, QwQ, Granite 4, MiMo)
//   llama3_json  {"name": "f", "parameters": {...}} as the whole reply, optionally after
//                <|python_tag|>, several joined by ';' (Llama 3.1 / 3.2 / 3.3)
//   mistral      [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...] (Mistral Nemo, v3
//                tokenizers) or [TOOL_CALLS]f[ARGS]{...} per call, with an optional
//                [CALL_ID]id before [ARGS] (Mistral Small 3.2, Devstral, Ministral 3)
// Templates of other formats (Qwen3-Coder's <function=...> XML, GLM's <arg_key>, Apriel's
// <tool_calls>[...], Functionary, Command R, ...) are not recognized: the server then refuses tool
// calls instead of returning unparsed text.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace jisu::server {

enum class ToolCallFormat { kNone, kHermes, kLlama3Json, kMistral };

ToolCallFormat DetectToolCallFormat(std::string_view template_source);

std::string_view ToolCallFormatName(ToolCallFormat format);  // "none", "hermes", ...
std::optional<ToolCallFormat> ToolCallFormatFromName(std::string_view name);

// The marker strings the parser looks for. A model's vocabulary may hold them as special tokens
// (Mistral's [TOOL_CALLS], Llama's <|python_tag|>), which decoding normally drops: the server
// keeps exactly these in the text it parses.
std::vector<std::string> ToolCallMarkers(ToolCallFormat format);

// A new call id as the family's templates accept it back in later turns: Mistral's templates
// require 9 letters or digits; the others get OpenAI's "call_" + 24 letters or digits.
std::string NewToolCallId(ToolCallFormat format, std::mt19937_64* rng);

}  // namespace jisu::server
