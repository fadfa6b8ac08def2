// tool_choice "required" or a named function, made a constraint on decoding: the request's
// SamplingParams::structured becomes the GBNF of tool_call_grammar.h (the family's call syntax,
// each call's arguments following its function's JSON Schema), so the output is calls the
// server's parser reads back (tool_call_parser.h) through the same continuous batch as every
// other request. The request's other tool fields are validated (tool_fields.h).
#pragma once

#include <optional>

#include "server/openai_protocol.h"
#include "server/tools/tool_call_grammar.h"

namespace jisu::server {

// Nothing for tool_choice "auto" and "none". Otherwise sets g->sampling.structured and
// g->constraint_param ("tool_choice"), or answers a 400: another structured-output field in the
// same request (one constraint per request), a function whose parameters cannot be a
// constraint (naming tools[i].function.parameters and the function). A model whose calls have
// no format (`format` kNone) is CheckToolsServable's 400 (tool_fields.h), asked first.
std::optional<ApiError> ConstrainToolChoice(ToolCallFormat format, MistralCallSyntax mistral,
                                            GenerationRequest* g);

}  // namespace jisu::server
