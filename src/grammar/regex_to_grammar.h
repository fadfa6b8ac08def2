// Regular expressions (the ECMAScript subset JSON Schema's `pattern` uses) -> grammar IR.
//
// Supported: literals, `.`, classes [a-z] [^...] with \d \w \s \D \W \S inside or outside,
// escapes \n \r \t \f \v \0 \xHH \uHHHH \u{H...} and escaped punctuation, groups (...) (?:...)
// (?<name>...), alternation, quantifiers * + ? {n} {n,} {n,m} (lazy forms match the same
// strings), and ^ / $ at the start / end of a top-level alternative. Rejected with an error:
// backreferences, lookaround, \b \B, inline flags, anchors elsewhere. Nesting, length and
// repetition bounds are limited (patterns come from request bodies).
//
// Two targets:
//   kText        the output text itself must match the whole pattern (the "regex" constraint);
//   kJsonString  the pattern constrains a JSON string's value, so each character is emitted as
//                JSON text (`"` as \", `\` as \\, control characters escaped) and JSON Schema's
//                search semantics apply: unless anchored, anything may precede and follow.
#pragma once

#include <string_view>

#include "grammar/grammar.h"
#include "jisu/status.h"

namespace jisu::grammar {

enum class RegexTarget { kText, kJsonString };

inline constexpr size_t kMaxRegexBytes = 16 * 1024;
inline constexpr int kMaxRegexNesting = 64;

// An expression for the pattern.
Result<Expr> RegexToExpr(std::string_view pattern, RegexTarget target);

// A grammar whose root matches exactly the strings the pattern fully matches.
Result<Grammar> RegexToGrammar(std::string_view pattern);

// One code point as JSON string text ("a", "\\\"", "\\n", "\\u001f").
Expr JsonChar(uint32_t cp);
// A class of code points as JSON string text: the raw characters JSON allows, and the escapes
// for `"`, `\` and control characters the class contains.
Expr JsonClass(const std::vector<CharRange>& ranges, bool negated);

}  // namespace jisu::grammar
