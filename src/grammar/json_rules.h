// The JSON building blocks of schema grammars, added to a Grammar on first use: whitespace,
// strings, numbers, any value, and the range/length/format forms a schema asks for.
//
// Whitespace is bounded so a model cannot loop on it: `ws ::= ([ ] | [\n] [ \t]{0,20})?` (one
// space, or a newline and an indentation, as llama.cpp and xgrammar allow), placed between
// tokens of the JSON text and never at its start or end. Numbers are bounded too (16 integer
// digits, 15 fraction digits, 2 exponent digits): every number generated is exact in a double.
// String escapes \uXXXX exclude surrogates, so one JSON character is one code point of the
// decoded string and minLength/maxLength count the way validators do.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "jisu/status.h"

namespace jisu::grammar {

class JsonRules {
 public:
  explicit JsonRules(Grammar* g) : g_(g) {}

  // Rule references (created on first use).
  Result<Expr> Ws();
  Result<Expr> Char();     // one JSON string character (raw or escaped)
  Result<Expr> String();   // any JSON string
  Result<Expr> Integer();  // any integer (up to 16 digits)
  Result<Expr> Number();   // any number
  Result<Expr> Boolean();
  Result<Expr> Null();
  Result<Expr> Value();   // any JSON value
  Result<Expr> Object();  // any JSON object
  Result<Expr> Array();   // any JSON array

  // Integers in [lo, hi] (absent = unbounded); |bounds| < 10^15.
  Result<Expr> IntegerRange(std::optional<int64_t> lo, std::optional<int64_t> hi);
  // Numbers in [lo, hi] for integer bounds, written without exponent.
  Result<Expr> NumberRange(std::optional<int64_t> lo, std::optional<int64_t> hi);
  // A string of min..max characters (max may be kUnbounded).
  Result<Expr> StringOfLength(uint32_t min, uint32_t max);
  // A string in `format` (date, time, date-time, uuid, email, ipv4); else an error naming the
  // supported ones.
  Result<Expr> StringFormat(std::string_view format);
  // A string whose value matches `pattern` (JSON Schema: searched, unless anchored).
  Result<Expr> StringPattern(std::string_view pattern);
  // A string that is none of `keys`, written without escapes (an escaped spelling of a key could
  // otherwise be a key in disguise). Helper rules are named after `base`.
  Result<Expr> KeyNotIn(const std::vector<std::string>& keys, std::string_view base);

  static constexpr int64_t kMaxBound = 999999999999999;  // 15 digits

 private:
  // A reference to rule `name`, defined by `body` the first time (the rule exists while its
  // body is built, so bodies may refer back to it).
  Result<Expr> Lazy(const char* name, const std::function<Result<Expr>()>& body);

  Grammar* g_;
};

}  // namespace jisu::grammar
