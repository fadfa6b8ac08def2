// The grammar of an output that calls tools, as the family writes calls (tool_call_format.h),
// in GBNF (llama.cpp's grammar syntax): what tool_choice "required" (one or more calls of the
// given tools; one when parallel_tool_calls is false) and a named function (one call of it)
// constrain decoding to (tool_choice.h puts it in SamplingParams::structured). The output is
// calls only, spelled exactly as the family's template renders past calls (the model was trained
// on that text); between calls, at most a little whitespace (a model cannot loop on it).
// Llama 3's templates take one call per turn and refuse more, so llama3_json gets one call.
//
// Each call's arguments follow its function's `parameters` JSON Schema (json_schema_to_grammar.h)
// in strict mode whatever the tool's `strict` says (additionalProperties absent means no other
// keys), as vLLM (xgrammar) and llama.cpp constrain tool arguments: every output validates
// against the schema. No `parameters` means an empty object, as OpenAI reads it; the arguments
// are an object in every format, so a schema without "type" is read as an object's and one of
// another type is refused.
#pragma once

#include <cstddef>
#include <string>

#include "jisu/status.h"
#include "server/tools/tool_call_format.h"
#include "server/tools/tool_request.h"

namespace jisu::server {

enum class MistralCallSyntax {
  kArray,  // [TOOL_CALLS][{"name": ..., "arguments": ...}, ...] (Mistral Nemo, v3 tokenizers)
  kArgs,   // [TOOL_CALLS]name[ARGS]{...} per call (Mistral Small 3.2, Devstral, Ministral 3)
};

// Which Mistral syntax a Mistral template renders.
MistralCallSyntax DetectMistralCallSyntax(std::string_view template_source);

// The GBNF grammar forcing `request`'s calls (choice kRequired or kFunction; request.tools
// validated by ParseToolRequest). An error for other choices or format kNone; when a function's
// parameters cannot be a constraint, an error naming the schema's problem and `*failed_tool`
// (when given) set to the tool's index in request.tools.
Result<std::string> ToolCallGrammar(ToolCallFormat format, MistralCallSyntax mistral,
                                    const ToolRequest& request, size_t* failed_tool = nullptr);

}  // namespace jisu::server
