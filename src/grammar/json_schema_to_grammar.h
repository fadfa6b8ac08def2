// JSON Schema -> grammar IR: the grammar's strings are JSON texts valid against the schema.
//
// Supported: type (object, array, string, number, integer, boolean, null, and arrays of types),
// properties / required / additionalProperties / minProperties / maxProperties, propertyNames
// (the keys of a map: length, pattern, format or enum), items / prefixItems
// / minItems / maxItems, enum, const, anyOf / oneOf (as alternatives), allOf (object schemas
// merged), $ref to "#" or
// "#/..." ($defs, definitions, any local pointer; recursion allowed), minLength / maxLength,
// pattern (regex_to_grammar.h, searched as JSON Schema says), format (date, time, date-time, uuid,
// email, ipv4), minimum / maximum / exclusiveMinimum / exclusiveMaximum for integers (and
// integer-valued inclusive bounds for numbers), nullable (OpenAPI). Annotations (title,
// description, default, examples, $schema, $id, $comment, deprecated, readOnly, writeOnly) are
// ignored. Any other keyword is an error naming it and where it is: a constraint is never
// dropped silently.
//
// What is generated is a subset of what the schema accepts, chosen so that every output
// validates: properties appear in the schema's order (optional ones may be left out), keys not
// in `properties` are allowed only by additionalProperties (true or a schema; absent means none
// when strict, any value otherwise) and never spell a declared key, oneOf branches are taken as
// anyOf (outputs are valid when the branches do not overlap, the usual case of a discriminator).
// prefixItems are all present. Whitespace between tokens is bounded (json_rules.h).
#pragma once

#include <string_view>

#include "grammar/grammar.h"
#include "jisu/status.h"

namespace jisu::grammar {

struct JsonSchemaOptions {
  // OpenAI's strict mode: additionalProperties absent means no other keys.
  bool strict = false;
};

// `schema` is JSON text. Errors are InvalidArgument naming the keyword and its JSON pointer.
Result<Grammar> JsonSchemaToGrammar(std::string_view schema, const JsonSchemaOptions& options);

// Any JSON object (OpenAI's response_format {"type": "json_object"}).
Result<Grammar> JsonObjectGrammar();

}  // namespace jisu::grammar
