// The string and number filters of the chat-template language: string, safe, escape, upper,
// lower, capitalize, title, trim, replace, tojson, indent, center, wordcount, truncate, format,
// int, float, abs, round; with the Python int()/float() string parsing and round() semantics
// they need, and HtmlEscape (markupsafe.escape). Filters over sequences and mappings are in
// jinja_filters_sequence.cc.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/jinja_builtins.h"
#include "chat/jinja_builtins_internal.h"
#include "chat/jinja_strings.h"

namespace jisu::jinja {
using builtins::Args;
using builtins::FilterTable;
using builtins::ToIndex;
using builtins::ToStr;
using builtins::TypeErr;

namespace {

// ---- Python int/float parsing for the int and float filters.

std::string StripAscii(const std::string& s) { return PyStrip(s, nullptr, true, true); }

bool ParsePyInt(const std::string& raw, int base, int64_t* out) {
  std::string s = StripAscii(raw);
  if (s.empty()) return false;
  size_t i = 0;
  bool neg = false;
  if (s[i] == '+' || s[i] == '-') {
    neg = s[i] == '-';
    ++i;
  }
  if (i + 1 < s.size() && s[i] == '0') {
    char p = char(s[i + 1] | 0x20);
    if ((p == 'x' && base == 16) || (p == 'o' && base == 8) || (p == 'b' && base == 2)) {
      i += 2;
      if (i < s.size() && s[i] == '_') ++i;
    }
  }
  if (i >= s.size()) return false;
  __int128 v = 0;
  bool prev_digit = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '_') {
      if (!prev_digit || i + 1 >= s.size()) return false;
      prev_digit = false;
      continue;
    }
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'z') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'Z') {
      d = c - 'A' + 10;
    } else {
      return false;
    }
    if (d >= base) return false;
    v = v * base + d;
    if (v > (__int128)INT64_MAX + 1) return false;
    prev_digit = true;
  }
  if (!prev_digit) return false;
  if (neg) v = -v;
  if (v > INT64_MAX || v < INT64_MIN) return false;
  *out = int64_t(v);
  return true;
}

bool ParsePyFloat(const std::string& raw, double* out) {
  std::string s = StripAscii(raw);
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '_') {
      bool ok = i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                std::isdigit(static_cast<unsigned char>(s[i + 1]));
      if (!ok) return false;
      continue;
    }
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' ||
          c == '+' || c == '-' || std::isalpha(static_cast<unsigned char>(c)))) {
      return false;
    }
    clean.push_back(c);
  }
  if (clean.empty()) return false;
  std::string lower = PyLower(clean);
  std::string body = (lower[0] == '+' || lower[0] == '-') ? lower.substr(1) : lower;
  if (body == "inf" || body == "infinity" || body == "nan") {
    double v = body == "nan" ? NAN : INFINITY;
    *out = lower[0] == '-' ? -v : v;
    return true;
  }
  // Only decimal forms: no hex floats.
  for (char c : body) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == '+' ||
          c == '-')) {
      return false;
    }
  }
  char* end = nullptr;
  *out = std::strtod(clean.c_str(), &end);
  return end == clean.c_str() + clean.size();
}

// Python round(x, ndigits) for floats: correctly rounded, ties to even.
double PyRound(double x, int64_t nd) {
  if (!std::isfinite(x)) return x;
  if (nd > 300) return x;
  if (nd >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", int(nd), x);
    return std::strtod(buf, nullptr);
  }
  if (nd < -308) return std::copysign(0.0, x);
  double p = std::pow(10.0, double(-nd));
  double y = x / p;
  double r = std::nearbyint(y);  // default rounding mode: ties to even
  return r * p;
}

// ---- filters

Result<Value> FString(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "string", a);
  return Value::String(Str(v));
}

Result<Value> FSafe(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "safe", a);
  return Value::Markup(Str(v));
}

Result<Value> FEscape(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "escape", a);
  if (v.is_markup()) return v;
  return Value::Markup(HtmlEscape(Str(v)));
}

Result<Value> FForceEscape(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "forceescape", a);
  return Value::Markup(HtmlEscape(Str(v)));
}

Result<Value> FUpper(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "upper", a);
  return Value::String(PyUpper(Str(v)));
}
Result<Value> FLower(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "lower", a);
  return Value::String(PyLower(Str(v)));
}
Result<Value> FCapitalize(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "capitalize", a);
  return Value::String(PyCapitalize(Str(v)));
}
Result<Value> FTitle(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "title", a);
  return Value::String(JinjaTitle(Str(v)));
}

Result<Value> FTrim(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "trim", a, "chars");
  std::string chars;
  if (b.IsSet(0)) {
    JISU_ASSIGN_OR_RETURN(chars, ToStr(*b.Get(0), "strip arg"));
  }
  return Value::String(PyStrip(Str(v), b.IsSet(0) ? &chars : nullptr, true, true));
}

Result<Value> FReplace(Interp& in, const Value& v, CallArgs& a) {
  BIND(b, "replace", a, "old", "new", "count");
  if (!b.Get(0) || !b.Get(1)) return TypeErr("replace() missing required arguments");
  int64_t count = -1;
  if (b.IsSet(2)) {
    JISU_ASSIGN_OR_RETURN(count, ToIndex(*b.Get(2), "count"));
  }
  std::string s = Str(v);
  JISU_ASSIGN_OR_RETURN(std::string r, PyReplace(s, Str(*b.Get(0)), Str(*b.Get(1)), count,
                                                 in.limits().max_value_bytes));
  JISU_RETURN_IF_ERROR(in.Charge(r.size()));
  return Value::String(std::move(r));
}

Result<Value> FToJson(Interp& in, const Value& v, CallArgs& a) {
  // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  BIND(b, "tojson", a, "ensure_ascii", "indent", "separators", "sort_keys");
  JsonOptions o;
  o.ensure_ascii = b.Get(0) && Truthy(*b.Get(0));
  if (b.IsSet(1)) {
    const Value& ind = *b.Get(1);
    o.has_indent = true;
    if (ind.is_string()) {
      o.indent = ind.s();
    } else if (ind.is_integral()) {
      if (ind.i() > 1000) return TypeErr("tojson: indent too large");
      o.indent = std::string(size_t(std::max<int64_t>(ind.i(), 0)), ' ');
    } else {
      return TypeErr("tojson: indent must be an int or a string");
    }
    o.item_separator = ",";
  }
  if (b.IsSet(2)) {
    const Value& sep = *b.Get(2);
    if (!sep.is_sequence() || sep.list().size() != 2 || !sep.list()[0].is_string() ||
        !sep.list()[1].is_string()) {
      return TypeErr("tojson: separators must be a pair of strings");
    }
    o.item_separator = sep.list()[0].s();
    o.key_separator = sep.list()[1].s();
  }
  o.sort_keys = b.Get(3) && Truthy(*b.Get(3));
  JISU_ASSIGN_OR_RETURN(std::string s, ToJson(v, o, in.limits().max_value_bytes));
  JISU_RETURN_IF_ERROR(in.Charge(s.size()));
  return Value::String(std::move(s));
}

Result<Value> FInt(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "int", a, "default", "base");
  Value def = b.Or(0, Value::Int(0));
  int64_t base = 10;
  if (b.Get(1)) {
    JISU_ASSIGN_OR_RETURN(base, ToIndex(*b.Get(1), "base"));
    if (base != 0 && (base < 2 || base > 36))
      return TypeErr("int() base must be >= 2 and <= 36, or 0");
  }
  if (v.is_undefined()) return TypeErr(v.undefined_hint());
  if (v.is_integral()) return Value::Int(v.i());
  if (v.is_float()) {
    double d = std::trunc(v.f());
    if (!std::isfinite(d) || d >= 9.2233720368547758e18 || d < -9.2233720368547758e18) return def;
    return Value::Int(int64_t(d));
  }
  if (v.is_string()) {
    int64_t out;
    if (ParsePyInt(v.s(), base == 0 ? 10 : int(base), &out)) return Value::Int(out);
    double d;
    if (ParsePyFloat(v.s(), &d)) {
      d = std::trunc(d);
      if (std::isfinite(d) && d < 9.2233720368547758e18 && d >= -9.2233720368547758e18) {
        return Value::Int(int64_t(d));
      }
    }
  }
  return def;
}

Result<Value> FFloat(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "float", a, "default");
  Value def = b.Or(0, Value::Float(0.0));
  if (v.is_undefined()) return TypeErr(v.undefined_hint());
  if (v.is_number()) return Value::Float(v.f());
  if (v.is_string()) {
    double d;
    if (ParsePyFloat(v.s(), &d)) return Value::Float(d);
  }
  return def;
}

Result<Value> FAbs(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "abs", a);
  if (v.is_undefined()) return TypeErr(v.undefined_hint());
  if (v.is_float()) return Value::Float(std::fabs(v.f()));
  if (v.is_integral()) {
    if (v.i() == INT64_MIN) return Status::OutOfRange("integer overflow");
    return Value::Int(v.i() < 0 ? -v.i() : v.i());
  }
  return TypeErr("bad operand type for abs(): '" + TypeName(v) + "'");
}

Result<Value> FRound(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "round", a, "precision", "method");
  int64_t precision = 0;
  if (b.Get(0)) {
    JISU_ASSIGN_OR_RETURN(precision, ToIndex(*b.Get(0), "precision"));
  }
  std::string method = b.Get(1) ? Str(*b.Get(1)) : "common";
  if (method != "common" && method != "ceil" && method != "floor") {
    return TypeErr("method must be common, ceil or floor");
  }
  if (v.is_undefined()) return TypeErr(v.undefined_hint());
  if (!v.is_number()) return TypeErr("type " + TypeName(v) + " doesn't define __round__ method");
  if (method == "common") {
    if (v.is_integral()) {
      if (precision >= 0) return Value::Int(v.i());
      double r = PyRound(double(v.i()), precision);
      return Value::Int(int64_t(r));
    }
    return Value::Float(PyRound(v.f(), precision));
  }
  if (precision > 300 || precision < -300) return Value::Float(v.f());
  double p = std::pow(10.0, double(precision));
  double x = v.f() * p;
  x = method == "ceil" ? std::ceil(x) : std::floor(x);
  return Value::Float(x / p);
}

Result<Value> FIndent(Interp& in, const Value& v, CallArgs& a) {
  BIND(b, "indent", a, "width", "first", "blank");
  std::string ind = "    ";
  if (b.Get(0)) {
    const Value& w = *b.Get(0);
    if (w.is_string()) {
      ind = w.s();
    } else {
      JISU_ASSIGN_OR_RETURN(int64_t n, ToIndex(w, "width"));
      if (n > 10000) return TypeErr("indent: width too large");
      ind = std::string(size_t(std::max<int64_t>(n, 0)), ' ');
    }
  }
  bool first = b.Get(1) && Truthy(*b.Get(1));
  bool blank = b.Get(2) && Truthy(*b.Get(2));
  std::string s = Str(v) + "\n";
  std::vector<std::string> lines = PySplitLines(s, false);
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv += "\n" + ind;
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      if (!lines[i].empty()) rv += ind;
      rv += lines[i];
      JISU_RETURN_IF_ERROR(in.CheckString(rv.size()));
    }
  }
  if (first) rv = ind + rv;
  JISU_RETURN_IF_ERROR(in.CheckString(rv.size()));
  JISU_RETURN_IF_ERROR(in.Charge(rv.size()));
  return Value::String(std::move(rv));
}

Result<Value> FCenter(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "center", a, "width");
  int64_t width = 80;
  if (b.Get(0)) {
    JISU_ASSIGN_OR_RETURN(width, ToIndex(*b.Get(0), "width"));
  }
  if (width > (1 << 20)) return TypeErr("center: width too large");
  return Value::String(PyPad(Str(v), width, ' ', '^'));
}

Result<Value> FWordcount(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "wordcount", a);
  std::string s = Str(v);
  int64_t n = 0;
  bool in_word = false;
  for (size_t p = 0; p < s.size();) {
    uint32_t c = DecodeUtf8(s, &p);
    bool w = c == '_' || IsAlnumCp(c);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::Int(n);
}

Result<Value> FTruncate(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "truncate", a, "length", "killwords", "end", "leeway");
  int64_t length = 255, leeway = 5;
  if (b.Get(0)) {
    JISU_ASSIGN_OR_RETURN(length, ToIndex(*b.Get(0), "length"));
  }
  if (b.IsSet(3)) {
    JISU_ASSIGN_OR_RETURN(leeway, ToIndex(*b.Get(3), "leeway"));
  }
  bool killwords = b.Get(1) && Truthy(*b.Get(1));
  std::string end = b.Get(2) ? Str(*b.Get(2)) : "...";
  int64_t end_len = int64_t(CodePointCount(end));
  if (length < end_len) return TypeErr("expected length >= " + std::to_string(end_len));
  if (leeway < 0) return TypeErr("expected leeway >= 0");
  std::vector<uint32_t> cps = ToCodePoints(Str(v));
  if (int64_t(cps.size()) <= length + leeway) return Value::String(Str(v));
  std::string head = FromCodePoints(cps, 0, size_t(length - end_len));
  if (killwords) return Value::String(head + end);
  size_t sp = head.rfind(' ');
  if (sp != std::string::npos) head = head.substr(0, sp);
  return Value::String(head + end);
}

Result<Value> FFormat(Interp& in, const Value& v, CallArgs& a) {
  if (!a.pos.empty() && !a.kw.empty()) {
    return TypeErr("can't handle positional and keyword arguments at the same time");
  }
  Value args;
  if (!a.kw.empty()) {
    Dict d;
    for (const auto& [k, val] : a.kw) d.Set(Value::String(k), val);
    args = Value::MakeDict(std::move(d));
  } else {
    args = Value::MakeTuple(a.pos);
  }
  JISU_ASSIGN_OR_RETURN(std::string s, PercentFormat(Str(v), args, in.limits().max_value_bytes));
  JISU_RETURN_IF_ERROR(in.Charge(s.size()));
  return Value::String(std::move(s));
}

}  // namespace

namespace builtins {

void AddTextFilters(FilterTable* t) {
  t->insert({
      {"abs", FAbs},
      {"capitalize", FCapitalize},
      {"center", FCenter},
      {"e", FEscape},
      {"escape", FEscape},
      {"float", FFloat},
      {"forceescape", FForceEscape},
      {"format", FFormat},
      {"indent", FIndent},
      {"int", FInt},
      {"lower", FLower},
      {"replace", FReplace},
      {"round", FRound},
      {"safe", FSafe},
      {"string", FString},
      {"title", FTitle},
      {"tojson", FToJson},
      {"trim", FTrim},
      {"truncate", FTruncate},
      {"upper", FUpper},
      {"wordcount", FWordcount},
  });
}

}  // namespace builtins

std::string HtmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}
}  // namespace jisu::jinja
