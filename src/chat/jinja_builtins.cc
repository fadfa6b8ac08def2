// Name lookup for the builtins of jinja_builtins.h: the filter table (filled by
// jinja_filters_text.cc and jinja_filters_sequence.cc) behind HasFilter / ApplyFilter, and the
// `is` tests (defined, none, string, odd, divisibleby, eq, ...) behind HasTest / ApplyTest.
// Operators, attribute access and globals live in jinja_operators.cc, jinja_attributes.cc and
// jinja_globals.cc.
#include "chat/jinja_builtins.h"

#include "chat/jinja_builtins_internal.h"
#include "chat/jinja_strings.h"

namespace jisu::jinja {
using builtins::AddSequenceFilters;
using builtins::AddTextFilters;
using builtins::FilterTable;
using builtins::TypeErr;

namespace {

const FilterTable& Filters() {
  static const auto* m = [] {
    auto* t = new FilterTable;
    AddTextFilters(t);
    AddSequenceFilters(t);
    return t;
  }();
  return *m;
}

// ---- tests

Result<bool> NumCompareTest(const std::string& op, const Value& v, const CallArgs& a) {
  if (a.pos.size() != 1 || !a.kw.empty()) return TypeErr("test '" + op + "' takes one argument");
  const Value& other = a.pos[0];
  if (op == "==") return Equals(v, other);
  if (op == "!=") return !Equals(v, other);
  JISU_ASSIGN_OR_RETURN(int c, Compare(v, other, op.c_str()));
  if (c == 2) return false;
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

Result<bool> IsOddEven(Interp& in, const Value& v, bool odd) {
  JISU_ASSIGN_OR_RETURN(Value r, BinaryOp(in, "%", v, Value::Int(2)));
  bool is_one = Equals(r, Value::Int(1));
  return odd ? is_one : Equals(r, Value::Int(0));
}

}  // namespace

bool HasFilter(const std::string& name) { return Filters().count(name) != 0; }

bool HasTest(const std::string& name) {
  static const char* kTests[] = {
      "defined",     "undefined",   "none",    "boolean", "false",    "true",     "integer",
      "float",       "number",      "string",  "mapping", "iterable", "sequence", "callable",
      "sameas",      "escaped",     "in",      "lower",   "upper",    "odd",      "even",
      "divisibleby", "eq",          "equalto", "ne",      "lt",       "lessthan", "le",
      "gt",          "greaterthan", "ge",      "filter",  "test"};
  for (const char* t : kTests) {
    if (name == t) return true;
  }
  return false;
}

Result<Value> ApplyFilter(Interp& in, const std::string& name, const Value& subject,
                          CallArgs& args) {
  auto it = Filters().find(name);
  if (it == Filters().end()) return TypeErr("No filter named '" + name + "'.");
  return it->second(in, subject, args);
}

Result<bool> ApplyTest(Interp& in, const std::string& n, const Value& v, CallArgs& a) {
  auto no_args = [&]() -> Status {
    if (!a.pos.empty() || !a.kw.empty()) return TypeErr("test '" + n + "' takes no arguments");
    return Status::Ok();
  };
  if (n == "defined" || n == "undefined") {
    JISU_RETURN_IF_ERROR(no_args());
    return v.is_undefined() == (n == "undefined");
  }
  if (n == "none") return v.is_none();
  if (n == "boolean") return v.is_bool();
  if (n == "false") return v.is_bool() && !v.b();
  if (n == "true") return v.is_bool() && v.b();
  if (n == "integer") return v.is_int();
  if (n == "float") return v.is_float();
  if (n == "number") return v.is_number();
  if (n == "string") return v.is_string();
  if (n == "mapping") return v.is_dict();
  if (n == "iterable") {
    return v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict() || v.is_loop() ||
           v.is_iterator();
  }
  if (n == "sequence") {
    return v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict();
  }
  if (n == "callable") return v.is_callable() || v.is_undefined() || v.is_loop();
  if (n == "escaped") return false;
  if (n == "sameas") {
    if (a.pos.size() != 1) return TypeErr("sameas takes one argument");
    const Value& o = a.pos[0];
    if (v.kind() != o.kind()) {
      return false;
    }
    switch (v.kind()) {
      case Value::Kind::kNone:
      case Value::Kind::kUndefined:
        return true;
      case Value::Kind::kBool:
        return v.b() == o.b();
      case Value::Kind::kInt:
        return v.i() == o.i() && v.i() >= -5 && v.i() <= 256;
      default:
        return v.identity() != nullptr && v.identity() == o.identity();
    }
  }
  if (n == "in") {
    if (a.pos.size() != 1) return TypeErr("in takes one argument");
    return Contains(a.pos[0], v);
  }
  if (n == "lower" || n == "upper") {
    std::string s = Str(v);
    bool any_cased = false;
    for (size_t p = 0; p < s.size();) {
      uint32_t c = DecodeUtf8(s, &p);
      if (!IsCased(c)) continue;
      any_cased = true;
      if (n == "lower" ? IsUpperCp(c) : IsLowerCp(c)) return false;
    }
    return any_cased;
  }
  if (n == "odd" || n == "even") return IsOddEven(in, v, n == "odd");
  if (n == "divisibleby") {
    if (a.pos.size() != 1) return TypeErr("divisibleby takes one argument");
    JISU_ASSIGN_OR_RETURN(Value r, BinaryOp(in, "%", v, a.pos[0]));
    return Equals(r, Value::Int(0));
  }
  if (n == "eq" || n == "equalto") return NumCompareTest("==", v, a);
  if (n == "ne") return NumCompareTest("!=", v, a);
  if (n == "lt" || n == "lessthan") return NumCompareTest("<", v, a);
  if (n == "le") return NumCompareTest("<=", v, a);
  if (n == "gt" || n == "greaterthan") return NumCompareTest(">", v, a);
  if (n == "ge") return NumCompareTest(">=", v, a);
  if (n == "filter") return v.is_string() && HasFilter(v.s());
  if (n == "test") return v.is_string() && HasTest(v.s());
  return TypeErr("No test named '" + n + "'.");
}
}  // namespace jisu::jinja
