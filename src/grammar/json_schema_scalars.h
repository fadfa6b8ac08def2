// The JSON Schema converter's leaves (json_schema_to_grammar.cc): what a schema's type is, and
// the expressions of enum/const values, strings, integers and numbers with their keywords.
// Errors name the keyword and its JSON pointer (`ptr`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/json_rules.h"
#include "grammar/json_schema_internal.h"

namespace jisu::grammar {

// OpenAPI's "nullable": true.
bool Nullable(const Json& s);
// The schema's types: its "type" (a string or an array), else inferred from the keywords
// present ("any" when none tells).
Result<std::vector<std::string>> TypesOf(const Json& s, const std::string& ptr);
// enum / const values (filtered by "type"), objects and arrays with the usual whitespace.
Result<Expr> EnumExpr(const Json& s, const std::string& ptr, JsonRules* rules);
// A non-negative count keyword (minItems, maxLength, ...), at most Grammar::kMaxRepeat.
Result<uint32_t> Count(const Json& s, const char* key, const std::string& ptr, uint32_t def);
// minLength/maxLength, pattern or format (one of them).
Result<Expr> StringExpr(const Json& s, const std::string& ptr, JsonRules* rules);
// minimum/maximum/exclusiveMinimum/exclusiveMaximum (draft 4 booleans too).
Result<Expr> IntegerExpr(const Json& s, const std::string& ptr, JsonRules* rules);
// Integer-valued minimum/maximum; exclusive bounds are refused.
Result<Expr> NumberExpr(const Json& s, const std::string& ptr, JsonRules* rules);

}  // namespace jisu::grammar
