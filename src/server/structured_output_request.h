// The request fields that constrain or bias what is sampled, as the OpenAI API and the servers
// users come from spell them, parsed into SamplingParams::structured / logit_bias:
//   response_format  {"type": "text"} | {"type": "json_object"} | {"type": "json_schema",
//                    "json_schema": {"name", "schema", "strict", "description"}}
//                    (llama.cpp's {"type": "json_object", "schema": {...}} is a json_schema)
//   vLLM             guided_json (a schema, object or JSON text), guided_regex, guided_grammar
//                    (GBNF), guided_choice (strings), structured_outputs {json | regex | grammar
//                    | choice}; guided_decoding_backend is accepted and ignored (jisu has one)
//   llama.cpp        grammar (GBNF), json_schema (a schema)
//   jisu             "jisu": {"grammar": "<GBNF>"} or {"regex": "..."}
//   logit_bias       {"<token id>": bias in [-100, 100]}
// At most one constraint per request. Schemas given as guided_json, json_schema or
// structured_outputs.json are strict (no keys beyond `properties` unless additionalProperties
// says so), as vLLM's xgrammar and llama.cpp treat them; response_format follows its `strict`.
// Malformed fields are a 400 naming the field. Fields jisu does not implement and a client would
// rely on (functions / function_call, guided_whitespace_pattern, structural_tag) are a 400 too,
// never ignored. Whether the constraint compiles is checked against the model afterwards
// (Engine::CheckStructuredOutput), with GenerationRequest::constraint_param as the field.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "server/openai_protocol.h"

namespace jisu::server {

std::optional<ApiError> ParseStructuredOutput(const nlohmann::ordered_json& body,
                                              GenerationRequest* out);

}  // namespace jisu::server
