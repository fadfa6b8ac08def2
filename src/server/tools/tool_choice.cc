#include "server/tools/tool_choice.h"

#include <string>

namespace jisu::server {

std::optional<ApiError> ConstrainToolChoice(ToolCallFormat format, MistralCallSyntax mistral,
                                            GenerationRequest* g) {
  const ToolRequest& tools = g->tools;
  if (tools.tools.is_null() ||
      (tools.choice != ToolChoice::kRequired && tools.choice != ToolChoice::kFunction)) {
    return std::nullopt;
  }
  const std::string choice =
      tools.choice == ToolChoice::kRequired ? "\"required\"" : "a named function";
  if (!g->constraint_param.empty()) {
    return ApiError::BadRequest("'tool_choice' " + choice +
                                    " constrains the output to tool "
                                    "calls and cannot be combined with '" +
                                    g->constraint_param + "'",
                                "tool_choice");
  }
  size_t failed = tools.tools.size();
  auto grammar = ToolCallGrammar(format, mistral, tools, &failed);
  if (!grammar.ok()) {
    if (failed < tools.tools.size()) {
      const std::string param = "tools[" + std::to_string(failed) + "].function.parameters";
      const std::string name = tools.tools[failed]["function"]["name"].get<std::string>();
      return ApiError::BadRequest(
          "'" + param + "' of function \"" + name +
              "\" cannot constrain the call's arguments: " + grammar.status().message(),
          param);
    }
    return ApiError::BadRequest("'tool_choice' " + choice + ": " + grammar.status().message(),
                                "tool_choice");
  }
  g->sampling.structured.kind = StructuredOutput::Kind::kGrammar;
  g->sampling.structured.text = std::move(*grammar);
  g->sampling.structured.strict = false;
  // The family's markers may be special tokens (Mistral's [TOOL_CALLS], [ARGS], [CALL_ID]):
  // the model writes them as those tokens, as it was trained to, not spelled out in pieces.
  g->sampling.structured.special_tokens = ToolCallMarkers(format);
  g->constraint_param = "tool_choice";
  return std::nullopt;
}

}  // namespace jisu::server
