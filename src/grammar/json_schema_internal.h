// Shared by the JSON Schema converter's files (json_schema_to_grammar.cc, json_schema_merge.cc).
#pragma once

#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "jisu/status.h"

namespace jisu::grammar {

using Json = nlohmann::ordered_json;

inline constexpr int kMaxSchemaDepth = 128;  // nested schemas, $ref and allOf chains

// Keywords that only annotate (ignored).
extern const std::set<std::string> kAnnotations;

// InvalidArgument "json_schema at <ptr>: <what>".
Status SchemaError(const std::string& ptr, const std::string& what);

// The schema without annotations and definitions ($defs, definitions) and `also_drop`.
Json Constraints(const Json& s, std::initializer_list<const char*> also_drop = {});

// Resolves a local $ref ("#/..."); `ptr` is where it was found, for the error.
using ResolveFn =
    std::function<Result<const Json*>(const std::string& ref, const std::string& ptr)>;

// allOf: the branches (references resolved) merged into one schema with the siblings. A
// branch's additionalProperties: false keeps only the keys it declares (JSON Schema's meaning),
// so a property another branch requires but it excludes is an error. `depth`: the caller's.
Result<Json> MergeAllOf(const Json& s, const std::string& ptr, const ResolveFn& resolve, int depth);

}  // namespace jisu::grammar
