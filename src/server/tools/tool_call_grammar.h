// The grammar of an output that calls tools, as the family writes calls (tool_call_format.h),
// in GBNF (llama.cpp's grammar syntax): what tool_choice "required" (one or more calls of the
// given tools; one when parallel_tool_calls is false) and a named function (one call of it)
// need decoding to be constrained by. The output is calls only, spelled exactly as the family's
// template renders past calls (the model was trained on that text); arguments are any JSON
// object.
//
// Not used by the server yet: it answers those tool_choice values with a 400 until sampling can
// be constrained by a grammar (issue 39, structured output). Narrowing each function's
// arguments to its JSON Schema is that work's converter's: the arguments rule of each call
// (`args-<i>`) is where its grammar goes.
#pragma once

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
// validated by ParseToolRequest). An error for other choices or format kNone.
Result<std::string> ToolCallGrammar(ToolCallFormat format, MistralCallSyntax mistral,
                                    const ToolRequest& request);

}  // namespace jisu::server
