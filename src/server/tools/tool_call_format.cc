#include "server/tools/tool_call_format.h"

namespace jisu::server {
namespace {

bool Has(std::string_view s, std::string_view what) { return s.find(what) != s.npos; }

}  // namespace

ToolCallFormat DetectToolCallFormat(std::string_view t) {
  // Formats whose calls are not JSON share markers with those that are: rule them out first.
  if (Has(t, "<function=") || Has(t, "<arg_key>") || Has(t, "<tool_calls>")) {
    return ToolCallFormat::kNone;
  }
  if (Has(t, "[TOOL_CALLS]")) return ToolCallFormat::kMistral;
  if (Has(t, "<tool_call>") && (Has(t, "\"name\"") || Has(t, "\\\"name\\\""))) {
    return ToolCallFormat::kHermes;
  }
  // Llama 3.1 names the tag; 3.2 only renders tool results under the ipython role.
  if (Has(t, "<|python_tag|>") ||
      (Has(t, "<|start_header_id|>") && Has(t, "ipython") && Has(t, "\"parameters\": "))) {
    return ToolCallFormat::kLlama3Json;
  }
  return ToolCallFormat::kNone;
}

std::string_view ToolCallFormatName(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone:
      return "none";
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kLlama3Json:
      return "llama3_json";
    case ToolCallFormat::kMistral:
      return "mistral";
  }
  return "none";
}

std::optional<ToolCallFormat> ToolCallFormatFromName(std::string_view name) {
  for (ToolCallFormat f : {ToolCallFormat::kNone, ToolCallFormat::kHermes,
                           ToolCallFormat::kLlama3Json, ToolCallFormat::kMistral}) {
    if (ToolCallFormatName(f) == name) return f;
  }
  return std::nullopt;
}

std::vector<std::string> ToolCallMarkers(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone:
      return {};
    case ToolCallFormat::kHermes:
      return {"<tool_call>", "</tool_call>"};
    case ToolCallFormat::kLlama3Json:
      return {"<|python_tag|>"};
    case ToolCallFormat::kMistral:
      return {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"};
  }
  return {};
}

std::string NewToolCallId(ToolCallFormat format, std::mt19937_64* rng) {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const bool mistral = format == ToolCallFormat::kMistral;
  std::string id = mistral ? "" : "call_";
  std::uniform_int_distribution<int> pick(0, sizeof(kAlnum) - 2);
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlnum[pick(*rng)];
  return id;
}

}  // namespace jisu::server
