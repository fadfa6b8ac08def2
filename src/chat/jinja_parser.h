// Parser from tokens to the syntax tree, following jinja2's grammar and operator precedence
// (condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary < postfix/filters).
// Nesting depth is bounded so hostile templates cannot exhaust the stack.
#pragma once

#include <string>

#include "chat/jinja_ast.h"
#include "jisu/status.h"

namespace jisu::jinja {

inline constexpr int kMaxParseDepth = 128;

// Parses a normalized template source (see NormalizeSource).
Result<Body> ParseTemplate(const std::string& source);

}  // namespace jisu::jinja
