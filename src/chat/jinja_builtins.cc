#include "chat/jinja_builtins.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <initializer_list>
#include <unordered_map>

#include "chat/jinja_strings.h"

namespace jisu::jinja {
namespace {

Status TypeErr(const std::string& m) { return Status::InvalidArgument(m); }

// Binds positional and keyword arguments to parameter names, like a Python signature.
class Args {
 public:
  Args(const std::string& fname, const CallArgs& a, std::initializer_list<const char*> names)
      : names_(names), vals_(names.size(), nullptr) {
    if (a.pos.size() > names_.size()) {
      status_ = TypeErr(fname + "() takes at most " + std::to_string(names_.size()) +
                        " argument(s) (" + std::to_string(a.pos.size()) + " given)");
      return;
    }
    for (size_t i = 0; i < a.pos.size(); ++i) vals_[i] = &a.pos[i];
    for (const auto& [k, v] : a.kw) {
      size_t idx = names_.size();
      for (size_t i = 0; i < names_.size(); ++i) {
        if (k == names_[i]) idx = i;
      }
      if (idx == names_.size()) {
        status_ = TypeErr(fname + "() got an unexpected keyword argument '" + k + "'");
        return;
      }
      if (vals_[idx] != nullptr) {
        status_ = TypeErr(fname + "() got multiple values for argument '" + k + "'");
        return;
      }
      vals_[idx] = &v;
    }
  }
  const Status& status() const { return status_; }
  const Value* Get(size_t i) const { return vals_[i]; }
  Value Or(size_t i, Value def) const { return vals_[i] ? *vals_[i] : std::move(def); }
  // Missing or None.
  bool IsSet(size_t i) const { return vals_[i] != nullptr && !vals_[i]->is_none(); }

 private:
  std::vector<const char*> names_;
  std::vector<const Value*> vals_;
  Status status_;
};

#define BIND(var, fname, args, ...)     \
  Args var(fname, args, {__VA_ARGS__}); \
  JISU_RETURN_IF_ERROR(var.status())

Result<int64_t> ToIndex(const Value& v, const char* what) {
  if (v.is_integral()) return v.i();
  return TypeErr(std::string("'") + TypeName(v) + "' object cannot be interpreted as an integer (" +
                 what + ")");
}

Result<std::string> ToStr(const Value& v, const char* what) {
  if (v.is_string()) return v.s();
  return TypeErr(std::string(what) + " must be str, not " + TypeName(v));
}

Value StrList(const std::vector<std::string>& parts) {
  List l;
  l.reserve(parts.size());
  for (const auto& p : parts) l.push_back(Value::String(p));
  return Value::MakeList(std::move(l));
}

Result<size_t> Length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return size_t(0);
    case Value::Kind::kString:
      return CodePointCount(v.s());
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      return v.list().size();
    case Value::Kind::kDict:
      return v.dict().items.size();
    case Value::Kind::kLoop:
      return v.loop().items->size();
    default:
      return TypeErr("object of type '" + TypeName(v) + "' has no len()");
  }
}

Value MakeFn(std::string name, std::function<Result<Value>(Interp&, CallArgs&)> fn) {
  auto c = std::make_shared<Callable>();
  c->name = std::move(name);
  c->fn = std::move(fn);
  return Value::MakeCallable(std::move(c));
}

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

// ---- comparisons / sorting keys for sort, unique, min, max, dictsort.

Value CaseKey(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::String(PyLower(v.s()));
  return v;
}

// jinja2's make_attrgetter: "a.b.0" walks getitem with int parts for digits.
Result<Value> AttrPath(Interp& in, const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return GetItem(in, item, attribute);
  Value cur = item;
  const std::string& path = attribute.s();
  size_t b = 0;
  while (true) {
    size_t dot = path.find('.', b);
    std::string part = path.substr(b, dot == std::string::npos ? std::string::npos : dot - b);
    Value key;
    if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos &&
        part.size() < 18) {
      key = Value::Int(std::stoll(part));
    } else {
      key = Value::String(part);
    }
    if (cur.is_undefined()) return TypeErr(cur.undefined_hint());
    JISU_ASSIGN_OR_RETURN(cur, GetItem(in, cur, key));
    if (dot == std::string::npos) break;
    b = dot + 1;
  }
  return cur;
}

Status SortValues(Interp& in, std::vector<std::pair<Value, Value>>* keyed, bool reverse) {
  Status err;
  JISU_RETURN_IF_ERROR(in.Charge(keyed->size() * 16));
  auto less = [&](const std::pair<Value, Value>& a, const std::pair<Value, Value>& b) {
    if (!err.ok()) return false;
    const Value& x = reverse ? b.first : a.first;
    const Value& y = reverse ? a.first : b.first;
    auto c = Compare(x, y, "<");
    if (!c.ok()) {
      err = c.status();
      return false;
    }
    return *c == -1;
  };
  std::stable_sort(keyed->begin(), keyed->end(), less);
  return err;
}

Result<Value> PyAttr(const Value& obj, const std::string& name, bool* found);
Value NoAttr(const Value& obj, const std::string& name);

// ---- filters

using FilterFn = Result<Value> (*)(Interp&, const Value&, CallArgs&);

Result<Value> FDefault(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "default", a, "default_value", "boolean");
  bool boolean = b.Get(1) && Truthy(*b.Get(1));
  if (v.is_undefined() || (boolean && !Truthy(v))) return b.Or(0, Value::String(""));
  return v;
}

Result<Value> FLength(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "length", a);
  JISU_ASSIGN_OR_RETURN(size_t n, Length(v));
  return Value::Int(int64_t(n));
}

Result<Value> FList(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "list", a);
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  return Value::MakeList(std::move(l));
}

Result<Value> FString(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "string", a);
  return Value::String(Str(v));
}

Result<Value> FSafe(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "safe", a);
  return v.is_undefined() ? Value::String("") : v;
}

Result<Value> FEscape(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "escape", a);
  return Value::String(HtmlEscape(Str(v)));
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

Result<Value> FFirst(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "first", a);
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  if (l.empty()) return Value::Undefined("No first item, sequence was empty.");
  return l.front();
}

Result<Value> FLast(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "last", a);
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  if (l.empty()) return Value::Undefined("No last item, sequence was empty.");
  return l.back();
}

Result<Value> FJoin(Interp& in, const Value& v, CallArgs& a) {
  BIND(b, "join", a, "d", "attribute");
  std::string sep = b.Get(0) ? Str(*b.Get(0)) : "";
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  std::string out;
  for (size_t i = 0; i < l.size(); ++i) {
    if (i) out += sep;
    if (b.IsSet(1)) {
      JISU_ASSIGN_OR_RETURN(Value x, AttrPath(in, l[i], *b.Get(1)));
      out += Str(x);
    } else {
      out += Str(l[i]);
    }
    JISU_RETURN_IF_ERROR(in.CheckString(out.size()));
  }
  JISU_RETURN_IF_ERROR(in.Charge(out.size()));
  return Value::String(std::move(out));
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

Result<Value> FItems(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "items", a);
  if (v.is_undefined()) return Value::MakeList({});
  if (!v.is_dict()) return TypeErr("Can only get item pairs from a mapping.");
  List out;
  for (const auto& [k, val] : v.dict().items) out.push_back(Value::MakeTuple({k, val}));
  return Value::MakeList(std::move(out));
}

Result<Value> FDictSort(Interp& in, const Value& v, CallArgs& a) {
  BIND(b, "dictsort", a, "case_sensitive", "by", "reverse");
  if (!v.is_dict()) return TypeErr("dictsort: value must be a mapping");
  bool cs = b.Get(0) && Truthy(*b.Get(0));
  std::string by = b.Get(1) ? Str(*b.Get(1)) : "key";
  if (by != "key" && by != "value")
    return TypeErr("You can only sort by either \"key\" or \"value\"");
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [k, val] : v.dict().items) {
    keyed.emplace_back(CaseKey(by == "key" ? k : val, cs), Value::MakeTuple({k, val}));
  }
  JISU_RETURN_IF_ERROR(SortValues(in, &keyed, b.Get(2) && Truthy(*b.Get(2))));
  List out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::MakeList(std::move(out));
}

Result<Value> FSort(Interp& in, const Value& v, CallArgs& a) {
  BIND(b, "sort", a, "reverse", "case_sensitive", "attribute");
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  bool cs = b.Get(1) && Truthy(*b.Get(1));
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& item : l) {
    Value key = item;
    if (b.IsSet(2)) {
      JISU_ASSIGN_OR_RETURN(key, AttrPath(in, item, *b.Get(2)));
    }
    keyed.emplace_back(CaseKey(key, cs), item);
  }
  JISU_RETURN_IF_ERROR(SortValues(in, &keyed, b.Get(0) && Truthy(*b.Get(0))));
  List out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::MakeList(std::move(out));
}

Result<Value> FReverse(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "reverse", a);
  if (v.is_string()) {
    std::vector<uint32_t> cps = ToCodePoints(v.s());
    std::reverse(cps.begin(), cps.end());
    return Value::String(FromCodePoints(cps, 0, cps.size()));
  }
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  std::reverse(l.begin(), l.end());
  return Value::MakeList(std::move(l));
}

Result<Value> FUnique(Interp& in, const Value& v, CallArgs& a) {
  BIND(b, "unique", a, "case_sensitive", "attribute");
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  bool cs = b.Get(0) && Truthy(*b.Get(0));
  List seen, out;
  JISU_RETURN_IF_ERROR(in.Charge(l.size() * l.size() / 16 + l.size()));
  for (auto& item : l) {
    Value key = item;
    if (b.IsSet(1)) {
      JISU_ASSIGN_OR_RETURN(key, AttrPath(in, item, *b.Get(1)));
    }
    key = CaseKey(key, cs);
    if (key.is_list() || key.is_dict()) return TypeErr("unhashable type: '" + TypeName(key) + "'");
    bool dup = false;
    for (const auto& s : seen) {
      if (Equals(s, key)) {
        dup = true;
        break;
      }
    }
    if (!dup) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::MakeList(std::move(out));
}

Result<Value> MinMax(Interp& in, const Value& v, CallArgs& a, bool want_max) {
  BIND(b, want_max ? "max" : "min", a, "case_sensitive", "attribute");
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  if (l.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  bool cs = b.Get(0) && Truthy(*b.Get(0));
  size_t best = 0;
  Value best_key;
  for (size_t i = 0; i < l.size(); ++i) {
    Value key = l[i];
    if (b.IsSet(1)) {
      JISU_ASSIGN_OR_RETURN(key, AttrPath(in, l[i], *b.Get(1)));
    }
    key = CaseKey(key, cs);
    if (i == 0) {
      best_key = key;
      continue;
    }
    JISU_ASSIGN_OR_RETURN(int c, Compare(key, best_key, want_max ? ">" : "<"));
    if ((want_max && c == 1) || (!want_max && c == -1)) {
      best = i;
      best_key = key;
    }
  }
  return l[best];
}
Result<Value> FMax(Interp& in, const Value& v, CallArgs& a) { return MinMax(in, v, a, true); }
Result<Value> FMin(Interp& in, const Value& v, CallArgs& a) { return MinMax(in, v, a, false); }

Result<Value> FSum(Interp& in, const Value& v, CallArgs& a) {
  BIND(b, "sum", a, "attribute", "start");
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  Value acc = b.Or(1, Value::Int(0));
  for (auto& item : l) {
    Value x = item;
    if (b.IsSet(0)) {
      JISU_ASSIGN_OR_RETURN(x, AttrPath(in, item, *b.Get(0)));
    }
    JISU_ASSIGN_OR_RETURN(acc, BinaryOp(in, "+", acc, x));
  }
  return acc;
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

Result<Value> FAttr(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "attr", a, "name");
  if (!b.Get(0)) return TypeErr("attr() missing required argument 'name'");
  // jinja2's attr() only looks at Python attributes, never at dict items.
  std::string name = Str(*b.Get(0));
  bool found;
  JISU_ASSIGN_OR_RETURN(Value attr, PyAttr(v, name, &found));
  if (found) return attr;
  return NoAttr(v, name);
}

Result<Value> FBatch(Interp& in, const Value& v, CallArgs& a) {
  BIND(b, "batch", a, "linecount", "fill_with");
  if (!b.Get(0)) return TypeErr("batch() missing required argument 'linecount'");
  JISU_ASSIGN_OR_RETURN(int64_t n, ToIndex(*b.Get(0), "linecount"));
  if (n <= 0) return TypeErr("batch: linecount must be positive");
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  List out, cur;
  for (auto& item : l) {
    cur.push_back(item);
    if (int64_t(cur.size()) == n) {
      out.push_back(Value::MakeList(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (b.IsSet(1)) {
      JISU_RETURN_IF_ERROR(in.CheckList(size_t(n)));
      while (int64_t(cur.size()) < n) cur.push_back(*b.Get(1));
    }
    out.push_back(Value::MakeList(std::move(cur)));
  }
  return Value::MakeList(std::move(out));
}

// select / reject / selectattr / rejectattr
Result<Value> SelectImpl(Interp& in, const Value& v, CallArgs& a, bool attr, bool want) {
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  size_t off = 0;
  Value attribute;
  if (attr) {
    if (a.pos.empty()) return TypeErr("Missing parameter for attribute name");
    attribute = a.pos[0];
    off = 1;
  }
  std::string test;
  bool has_test = a.pos.size() > off;
  if (has_test) test = Str(a.pos[off]);
  CallArgs targs;
  if (has_test) {
    targs.pos.assign(a.pos.begin() + long(off) + 1, a.pos.end());
    targs.kw = a.kw;
  }
  List out;
  for (auto& item : l) {
    JISU_RETURN_IF_ERROR(in.Charge(16));
    Value x = item;
    if (attr) {
      JISU_ASSIGN_OR_RETURN(x, AttrPath(in, item, attribute));
    }
    bool r;
    if (has_test) {
      CallArgs copy = targs;
      JISU_ASSIGN_OR_RETURN(r, ApplyTest(in, test, x, copy));
    } else {
      r = Truthy(x);
    }
    if (r == want) out.push_back(item);
  }
  return Value::MakeList(std::move(out));
}
Result<Value> FSelect(Interp& in, const Value& v, CallArgs& a) {
  return SelectImpl(in, v, a, false, true);
}
Result<Value> FReject(Interp& in, const Value& v, CallArgs& a) {
  return SelectImpl(in, v, a, false, false);
}
Result<Value> FSelectAttr(Interp& in, const Value& v, CallArgs& a) {
  return SelectImpl(in, v, a, true, true);
}
Result<Value> FRejectAttr(Interp& in, const Value& v, CallArgs& a) {
  return SelectImpl(in, v, a, true, false);
}

Result<Value> FMap(Interp& in, const Value& v, CallArgs& a) {
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  List out;
  if (a.pos.empty()) {
    const Value* attribute = nullptr;
    const Value* def = nullptr;
    for (const auto& [k, val] : a.kw) {
      if (k == "attribute") {
        attribute = &val;
      } else if (k == "default") {
        def = &val;
      } else {
        return TypeErr("Unexpected keyword argument '" + k + "'");
      }
    }
    if (!attribute) return TypeErr("map requires a filter argument");
    for (auto& item : l) {
      JISU_RETURN_IF_ERROR(in.Charge(16));
      JISU_ASSIGN_OR_RETURN(Value x, AttrPath(in, item, *attribute));
      if (x.is_undefined() && def) x = *def;
      out.push_back(std::move(x));
    }
    return Value::MakeList(std::move(out));
  }
  std::string name = Str(a.pos[0]);
  CallArgs fargs;
  fargs.pos.assign(a.pos.begin() + 1, a.pos.end());
  fargs.kw = a.kw;
  for (auto& item : l) {
    JISU_RETURN_IF_ERROR(in.Charge(16));
    CallArgs copy = fargs;
    JISU_ASSIGN_OR_RETURN(Value x, ApplyFilter(in, name, item, copy));
    out.push_back(std::move(x));
  }
  return Value::MakeList(std::move(out));
}

const std::unordered_map<std::string, FilterFn>& Filters() {
  static const auto* m = new std::unordered_map<std::string, FilterFn>{
      {"abs", FAbs},           {"attr", FAttr},
      {"batch", FBatch},       {"capitalize", FCapitalize},
      {"center", FCenter},     {"count", FLength},
      {"d", FDefault},         {"default", FDefault},
      {"dictsort", FDictSort}, {"e", FEscape},
      {"escape", FEscape},     {"first", FFirst},
      {"float", FFloat},       {"forceescape", FEscape},
      {"format", FFormat},     {"indent", FIndent},
      {"int", FInt},           {"items", FItems},
      {"join", FJoin},         {"last", FLast},
      {"length", FLength},     {"list", FList},
      {"lower", FLower},       {"map", FMap},
      {"max", FMax},           {"min", FMin},
      {"reject", FReject},     {"rejectattr", FRejectAttr},
      {"replace", FReplace},   {"reverse", FReverse},
      {"round", FRound},       {"safe", FSafe},
      {"select", FSelect},     {"selectattr", FSelectAttr},
      {"sort", FSort},         {"string", FString},
      {"sum", FSum},           {"title", FTitle},
      {"tojson", FToJson},     {"trim", FTrim},
      {"truncate", FTruncate}, {"unique", FUnique},
      {"upper", FUpper},       {"wordcount", FWordcount},
  };
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
    return v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict() || v.is_loop();
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

// ---- containment and arithmetic

Result<bool> Contains(const Value& c, const Value& item) {
  switch (c.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        return TypeErr("'in <string>' requires string as left operand, not " + TypeName(item));
      }
      return c.s().find(item.s()) != std::string::npos;
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      for (const auto& x : c.list()) {
        if (Equals(x, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      if (item.is_list() || item.is_dict())
        return TypeErr("unhashable type: '" + TypeName(item) + "'");
      return c.dict().Find(item) != nullptr;
    case Value::Kind::kLoop:
      for (const auto& x : *c.loop().items) {
        if (Equals(x, item)) return true;
      }
      return false;
    default:
      return TypeErr("argument of type '" + TypeName(c) + "' is not iterable");
  }
}

namespace {

Status OperandError(const char* op, const Value& a, const Value& b) {
  return TypeErr(std::string("unsupported operand type(s) for ") + op + ": '" + TypeName(a) +
                 "' and '" + TypeName(b) + "'");
}

Result<Value> Repeat(Interp& in, const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    size_t len = seq.s().size();
    if (len && uint64_t(n) > in.limits().max_value_bytes / len) {
      return Status::ResourceExhausted("chat template produced a string over the size limit");
    }
    JISU_RETURN_IF_ERROR(in.Charge(len * size_t(n)));
    std::string out;
    out.reserve(len * size_t(n));
    for (int64_t i = 0; i < n; ++i) out += seq.s();
    return Value::String(std::move(out));
  }
  size_t len = seq.list().size();
  if (len && uint64_t(n) > in.limits().max_list_items / len) {
    return Status::ResourceExhausted("chat template produced a list over the size limit");
  }
  JISU_RETURN_IF_ERROR(in.Charge(len * size_t(n) * 16));
  List out;
  out.reserve(len * size_t(n));
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list().begin(), seq.list().end());
  return seq.is_list() ? Value::MakeList(std::move(out)) : Value::MakeTuple(std::move(out));
}

// Python float floor division and modulo.
void FloatDivMod(double x, double y, double* div, double* mod) {
  double m = std::fmod(x, y);
  double d = (x - m) / y;
  if (m != 0) {
    if ((y < 0) != (m < 0)) {
      m += y;
      d -= 1.0;
    }
  } else {
    m = std::copysign(0.0, y);
  }
  double fd;
  if (d != 0) {
    fd = std::floor(d);
    if (d - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, x / y);
  }
  *div = fd;
  *mod = m;
}

}  // namespace

Result<Value> BinaryOp(Interp& in, const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) return TypeErr(a.undefined_hint());
  if (b.is_undefined()) return TypeErr(b.undefined_hint());
  const char* o = op.c_str();
  bool nums = a.is_number() && b.is_number();
  bool fl = nums && (a.is_float() || b.is_float());
  if (op == "+") {
    if (nums) {
      if (fl) return Value::Float(a.f() + b.f());
      int64_t r;
      if (__builtin_add_overflow(a.i(), b.i(), &r)) return Status::OutOfRange("integer overflow");
      return Value::Int(r);
    }
    if (a.is_string() && b.is_string()) {
      JISU_RETURN_IF_ERROR(in.CheckString(a.s().size() + b.s().size()));
      JISU_RETURN_IF_ERROR(in.Charge(a.s().size() + b.s().size()));
      return Value::String(a.s() + b.s());
    }
    if ((a.is_list() && b.is_list()) || (a.is_tuple() && b.is_tuple())) {
      JISU_RETURN_IF_ERROR(in.CheckList(a.list().size() + b.list().size()));
      JISU_RETURN_IF_ERROR(in.Charge((a.list().size() + b.list().size()) * 16));
      List out = a.list();
      out.insert(out.end(), b.list().begin(), b.list().end());
      return a.is_list() ? Value::MakeList(std::move(out)) : Value::MakeTuple(std::move(out));
    }
    if (a.is_string() || a.is_list() || a.is_tuple()) {
      return TypeErr("can only concatenate " + TypeName(a) + " (not \"" + TypeName(b) + "\") to " +
                     TypeName(a));
    }
    return OperandError(o, a, b);
  }
  if (op == "-") {
    if (!nums) return OperandError(o, a, b);
    if (fl) return Value::Float(a.f() - b.f());
    int64_t r;
    if (__builtin_sub_overflow(a.i(), b.i(), &r)) return Status::OutOfRange("integer overflow");
    return Value::Int(r);
  }
  if (op == "*") {
    if (nums) {
      if (fl) return Value::Float(a.f() * b.f());
      int64_t r;
      if (__builtin_mul_overflow(a.i(), b.i(), &r)) return Status::OutOfRange("integer overflow");
      return Value::Int(r);
    }
    if ((a.is_string() || a.is_sequence()) && b.is_integral()) return Repeat(in, a, b.i());
    if ((b.is_string() || b.is_sequence()) && a.is_integral()) return Repeat(in, b, a.i());
    if (a.is_string() || a.is_sequence()) {
      return TypeErr("can't multiply sequence by non-int of type '" + TypeName(b) + "'");
    }
    return OperandError(o, a, b);
  }
  if (op == "/") {
    if (!nums) return OperandError(o, a, b);
    if (b.f() == 0) return TypeErr("division by zero");
    return Value::Float(a.f() / b.f());
  }
  if (op == "//" || op == "%") {
    if (op == "%" && a.is_string()) {
      JISU_ASSIGN_OR_RETURN(std::string s, PercentFormat(a.s(), b, in.limits().max_value_bytes));
      JISU_RETURN_IF_ERROR(in.Charge(s.size()));
      return Value::String(std::move(s));
    }
    if (!nums) return OperandError(o, a, b);
    if (fl) {
      if (b.f() == 0) return TypeErr(op == "%" ? "float modulo" : "float floor division by zero");
      double d, m;
      FloatDivMod(a.f(), b.f(), &d, &m);
      return Value::Float(op == "%" ? m : d);
    }
    int64_t x = a.i(), y = b.i();
    if (y == 0) {
      return TypeErr(op == "%" ? "integer modulo by zero" : "integer division or modulo by zero");
    }
    if (x == INT64_MIN && y == -1) {
      if (op == "%") return Value::Int(0);
      return Status::OutOfRange("integer overflow");
    }
    int64_t q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) {
      q -= 1;
      r += y;
    }
    return Value::Int(op == "%" ? r : q);
  }
  if (op == "**") {
    if (!nums) return OperandError("** or pow()", a, b);
    if (!fl && b.i() >= 0) {
      int64_t base = a.i(), e = b.i(), r = 1;
      while (e > 0) {
        if (e & 1) {
          if (__builtin_mul_overflow(r, base, &r)) return Status::OutOfRange("integer overflow");
        }
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) {
          return Status::OutOfRange("integer overflow");
        }
      }
      return Value::Int(r);
    }
    double x = a.f(), y = b.f();
    if (x == 0 && y < 0) return TypeErr("0.0 cannot be raised to a negative power");
    if (x < 0 && std::isfinite(y) && y != std::floor(y)) {
      return Status::Unsupported("complex numbers are not supported");
    }
    double r = std::pow(x, y);
    if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) {
      return Status::OutOfRange("(34, 'Numerical result out of range')");
    }
    return Value::Float(r);
  }
  return TypeErr("unknown operator " + op);
}

// ---- attribute / item access

namespace {

Value Unsafe(const Value& obj, const std::string& name) {
  return Value::Undefined("access to attribute '" + name + "' of '" + TypeName(obj) +
                          "' object is unsafe.");
}

Value NoAttr(const Value& obj, const std::string& name) {
  return Value::Undefined("'" + ObjectTypeRepr(obj) + "' has no attribute '" + name + "'");
}

// A method bound to its receiver.
Value Bound(const Value& self, const std::string& name,
            Result<Value> (*impl)(Interp&, const Value&, const std::string&, CallArgs&)) {
  Value recv = self;
  std::string n = name;
  return MakeFn(name, [recv, n, impl](Interp& in, CallArgs& args) -> Result<Value> {
    return impl(in, recv, n, args);
  });
}

Result<Value> StrMethod(Interp& in, const Value& self, const std::string& m, CallArgs& a) {
  const std::string& s = self.s();
  auto opt_str = [&](const Args& b, size_t i, std::string* out) -> Result<bool> {
    if (!b.IsSet(i)) return false;
    JISU_ASSIGN_OR_RETURN(*out, ToStr(*b.Get(i), (m + " arg").c_str()));
    return true;
  };
  if (m == "strip" || m == "lstrip" || m == "rstrip") {
    BIND(b, m, a, "chars");
    std::string chars;
    JISU_ASSIGN_OR_RETURN(bool has, opt_str(b, 0, &chars));
    return Value::String(PyStrip(s, has ? &chars : nullptr, m != "rstrip", m != "lstrip"));
  }
  if (m == "split" || m == "rsplit") {
    BIND(b, m, a, "sep", "maxsplit");
    std::string sep;
    JISU_ASSIGN_OR_RETURN(bool has, opt_str(b, 0, &sep));
    int64_t maxsplit = -1;
    if (b.Get(1)) {
      JISU_ASSIGN_OR_RETURN(maxsplit, ToIndex(*b.Get(1), "maxsplit"));
    }
    JISU_RETURN_IF_ERROR(in.Charge(s.size() + 16));
    auto parts = m == "split" ? PySplit(s, has ? &sep : nullptr, maxsplit)
                              : PyRSplit(s, has ? &sep : nullptr, maxsplit);
    if (!parts.ok()) return parts.status();
    JISU_RETURN_IF_ERROR(in.CheckList(parts->size()));
    return StrList(*parts);
  }
  if (m == "splitlines") {
    BIND(b, m, a, "keepends");
    return StrList(PySplitLines(s, b.Get(0) && Truthy(*b.Get(0))));
  }
  if (m == "startswith" || m == "endswith") {
    BIND(b, m, a, "prefix", "start", "end");
    if (!b.Get(0)) return TypeErr(m + "() takes at least 1 argument (0 given)");
    if (b.Get(1) || b.Get(2)) {
      return Status::Unsupported(m + "() with start/end is not supported");
    }
    std::vector<std::string> cands;
    const Value& p = *b.Get(0);
    if (p.is_string()) {
      cands.push_back(p.s());
    } else if (p.is_tuple()) {
      for (const auto& x : p.list()) {
        JISU_ASSIGN_OR_RETURN(std::string c, ToStr(x, "tuple item"));
        cands.push_back(std::move(c));
      }
    } else {
      return TypeErr(m + " first arg must be str or a tuple of str, not " + TypeName(p));
    }
    for (const auto& c : cands) {
      bool hit = m == "startswith"
                     ? s.compare(0, c.size(), c) == 0
                     : (s.size() >= c.size() && s.compare(s.size() - c.size(), c.size(), c) == 0);
      if (hit) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  if (m == "upper" || m == "lower" || m == "title" || m == "capitalize" || m == "swapcase" ||
      m == "casefold") {
    BIND(b, m, a);
    if (m == "upper") return Value::String(PyUpper(s));
    if (m == "lower" || m == "casefold") return Value::String(PyLower(s));
    if (m == "title") return Value::String(PyTitle(s));
    if (m == "capitalize") return Value::String(PyCapitalize(s));
    return Value::String(PySwapcase(s));
  }
  if (m == "replace") {
    BIND(b, m, a, "old", "new", "count");
    if (!b.Get(0) || !b.Get(1)) return TypeErr("replace expected at least 2 arguments");
    JISU_ASSIGN_OR_RETURN(std::string old, ToStr(*b.Get(0), "replace() argument 1"));
    JISU_ASSIGN_OR_RETURN(std::string repl, ToStr(*b.Get(1), "replace() argument 2"));
    int64_t count = -1;
    if (b.Get(2)) {
      JISU_ASSIGN_OR_RETURN(count, ToIndex(*b.Get(2), "count"));
    }
    JISU_ASSIGN_OR_RETURN(std::string r,
                          PyReplace(s, old, repl, count, in.limits().max_value_bytes));
    JISU_RETURN_IF_ERROR(in.Charge(r.size()));
    return Value::String(std::move(r));
  }
  if (m == "find" || m == "rfind" || m == "index" || m == "rindex" || m == "count") {
    BIND(b, m, a, "sub");
    if (!b.Get(0)) return TypeErr(m + "() takes at least 1 argument (0 given)");
    JISU_ASSIGN_OR_RETURN(std::string sub, ToStr(*b.Get(0), "must be str"));
    if (m == "count") return Value::Int(PyCount(s, sub));
    int64_t r = PyFind(s, sub, m[0] == 'r');
    if (r < 0 && (m == "index" || m == "rindex")) return TypeErr("substring not found");
    return Value::Int(r);
  }
  if (m == "join") {
    BIND(b, m, a, "iterable");
    if (!b.Get(0)) return TypeErr("join() takes exactly one argument (0 given)");
    JISU_ASSIGN_OR_RETURN(List l, Iterate(*b.Get(0)));
    std::string out;
    for (size_t i = 0; i < l.size(); ++i) {
      if (!l[i].is_string()) {
        return TypeErr("sequence item " + std::to_string(i) + ": expected str instance, " +
                       TypeName(l[i]) + " found");
      }
      if (i) out += s;
      out += l[i].s();
      JISU_RETURN_IF_ERROR(in.CheckString(out.size()));
    }
    JISU_RETURN_IF_ERROR(in.Charge(out.size()));
    return Value::String(std::move(out));
  }
  if (m == "format") {
    JISU_ASSIGN_OR_RETURN(std::string r, BraceFormat(s, a, in.limits().max_value_bytes));
    JISU_RETURN_IF_ERROR(in.Charge(r.size()));
    return Value::String(std::move(r));
  }
  if (m == "isdigit" || m == "isdecimal" || m == "isnumeric" || m == "isalpha" || m == "isalnum" ||
      m == "isspace" || m == "isupper" || m == "islower") {
    BIND(b, m, a);
    if (m == "isupper" || m == "islower") {
      bool cased = false;
      for (size_t p = 0; p < s.size();) {
        uint32_t c = DecodeUtf8(s, &p);
        if (!IsCased(c)) continue;
        cased = true;
        if (m == "isupper" ? IsLowerCp(c) : IsUpperCp(c)) return Value::Bool(false);
      }
      return Value::Bool(cased);
    }
    if (s.empty()) return Value::Bool(false);
    for (size_t p = 0; p < s.size();) {
      uint32_t c = DecodeUtf8(s, &p);
      bool digit = c >= '0' && c <= '9';
      bool ok;
      if (m == "isspace") {
        ok = IsPySpace(c);
      } else if (m == "isalpha") {
        ok = IsAlnumCp(c) && !digit && !(c >= 0x660 && c <= 0x669);
      } else if (m == "isalnum") {
        ok = IsAlnumCp(c);
      } else {
        ok = digit;
      }
      if (!ok) return Value::Bool(false);
    }
    return Value::Bool(true);
  }
  if (m == "center" || m == "ljust" || m == "rjust") {
    BIND(b, m, a, "width", "fillchar");
    if (!b.Get(0)) return TypeErr(m + "() takes at least 1 argument");
    JISU_ASSIGN_OR_RETURN(int64_t w, ToIndex(*b.Get(0), "width"));
    if (w > int64_t(in.limits().max_value_bytes))
      return Status::ResourceExhausted("width too large");
    uint32_t fill = ' ';
    if (b.Get(1)) {
      JISU_ASSIGN_OR_RETURN(std::string f, ToStr(*b.Get(1), "fillchar"));
      if (CodePointCount(f) != 1)
        return TypeErr("The fill character must be exactly one character long");
      size_t p = 0;
      fill = DecodeUtf8(f, &p);
    }
    JISU_RETURN_IF_ERROR(in.Charge(size_t(std::max<int64_t>(w, 0))));
    return Value::String(PyPad(s, w, fill, m == "center" ? '^' : (m == "ljust" ? '<' : '>')));
  }
  if (m == "zfill") {
    BIND(b, m, a, "width");
    if (!b.Get(0)) return TypeErr("zfill() takes exactly one argument");
    JISU_ASSIGN_OR_RETURN(int64_t w, ToIndex(*b.Get(0), "width"));
    if (w > int64_t(in.limits().max_value_bytes))
      return Status::ResourceExhausted("width too large");
    int64_t len = int64_t(CodePointCount(s));
    if (w <= len) return self;
    std::string sign;
    std::string body = s;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
      sign = s.substr(0, 1);
      body = s.substr(1);
    }
    return Value::String(sign + std::string(size_t(w - len), '0') + body);
  }
  if (m == "partition" || m == "rpartition") {
    BIND(b, m, a, "sep");
    if (!b.Get(0)) return TypeErr(m + "() takes exactly one argument");
    JISU_ASSIGN_OR_RETURN(std::string sep, ToStr(*b.Get(0), "sep"));
    if (sep.empty()) return TypeErr("empty separator");
    size_t f = m == "partition" ? s.find(sep) : s.rfind(sep);
    if (f == std::string::npos) {
      if (m == "partition") {
        return Value::MakeTuple({Value::String(s), Value::String(""), Value::String("")});
      }
      return Value::MakeTuple({Value::String(""), Value::String(""), Value::String(s)});
    }
    return Value::MakeTuple({Value::String(s.substr(0, f)), Value::String(sep),
                             Value::String(s.substr(f + sep.size()))});
  }
  if (m == "removeprefix" || m == "removesuffix") {
    BIND(b, m, a, "affix");
    if (!b.Get(0)) return TypeErr(m + "() takes exactly one argument");
    JISU_ASSIGN_OR_RETURN(std::string x, ToStr(*b.Get(0), "affix"));
    if (m == "removeprefix" && s.compare(0, x.size(), x) == 0)
      return Value::String(s.substr(x.size()));
    if (m == "removesuffix" && !x.empty() && s.size() >= x.size() &&
        s.compare(s.size() - x.size(), x.size(), x) == 0) {
      return Value::String(s.substr(0, s.size() - x.size()));
    }
    return self;
  }
  return TypeErr("str method '" + m + "' is not supported");
}

const char* kStrMethods[] = {"strip",      "lstrip",       "rstrip",      "split",     "rsplit",
                             "splitlines", "startswith",   "endswith",    "upper",     "lower",
                             "title",      "capitalize",   "swapcase",    "casefold",  "replace",
                             "find",       "rfind",        "index",       "rindex",    "count",
                             "join",       "format",       "isdigit",     "isdecimal", "isnumeric",
                             "isalpha",    "isalnum",      "isspace",     "isupper",   "islower",
                             "center",     "ljust",        "rjust",       "zfill",     "partition",
                             "rpartition", "removeprefix", "removesuffix"};

Result<Value> DictMethod(Interp&, const Value& self, const std::string& m, CallArgs& a) {
  const Dict& d = self.dict();
  if (m == "items" || m == "keys" || m == "values") {
    BIND(b, m, a);
    List out;
    for (const auto& [k, v] : d.items) {
      if (m == "items") {
        out.push_back(Value::MakeTuple({k, v}));
      } else {
        out.push_back(m == "keys" ? k : v);
      }
    }
    return Value::MakeList(std::move(out));
  }
  if (m == "get") {
    BIND(b, m, a, "key", "default");
    if (!b.Get(0)) return TypeErr("get expected at least 1 argument, got 0");
    const Value* v = d.Find(*b.Get(0));
    if (v) return *v;
    return b.Or(1, Value::None());
  }
  if (m == "copy") {
    BIND(b, m, a);
    return self;
  }
  return TypeErr("dict method '" + m + "' is not supported");
}

Result<Value> ListMethod(Interp&, const Value& self, const std::string& m, CallArgs& a) {
  const List& l = self.list();
  if (m == "index" || m == "count") {
    BIND(b, m, a, "value");
    if (!b.Get(0)) return TypeErr(m + "() takes exactly one argument (0 given)");
    int64_t n = 0;
    for (size_t i = 0; i < l.size(); ++i) {
      if (Equals(l[i], *b.Get(0))) {
        if (m == "index") return Value::Int(int64_t(i));
        ++n;
      }
    }
    if (m == "index") return TypeErr(Repr(*b.Get(0)) + " is not in list");
    return Value::Int(n);
  }
  if (m == "copy") {
    BIND(b, m, a);
    return self;
  }
  return TypeErr("list method '" + m + "' is not supported");
}

Result<Value> LoopAttr(const Value& self, const std::string& name) {
  const LoopInfo& L = self.loop();
  int64_t len = int64_t(L.items->size());
  int64_t i = L.index0;
  if (name == "index") return Value::Int(i + 1);
  if (name == "index0") return Value::Int(i);
  if (name == "revindex") return Value::Int(len - i);
  if (name == "revindex0") return Value::Int(len - i - 1);
  if (name == "first") return Value::Bool(i == 0);
  if (name == "last") return Value::Bool(i == len - 1);
  if (name == "length") return Value::Int(len);
  if (name == "depth") return Value::Int(L.depth0 + 1);
  if (name == "depth0") return Value::Int(L.depth0);
  if (name == "previtem") {
    if (i == 0) return Value::Undefined("there is no previous item");
    return (*L.items)[size_t(i - 1)];
  }
  if (name == "nextitem") {
    if (i + 1 >= len) return Value::Undefined("there is no next item");
    return (*L.items)[size_t(i + 1)];
  }
  if (name == "cycle") {
    auto info = self.loop_ptr();
    return MakeFn("cycle", [info](Interp&, CallArgs& a) -> Result<Value> {
      if (a.pos.empty()) return TypeErr("no items for cycling given");
      return a.pos[size_t(info->index0) % a.pos.size()];
    });
  }
  if (name == "changed") {
    auto info = self.loop_ptr();
    return MakeFn("changed", [info](Interp&, CallArgs& a) -> Result<Value> {
      Value cur = Value::MakeTuple(a.pos);
      if (info->changed_called && Equals(info->last_changed, cur)) return Value::Bool(false);
      info->changed_called = true;
      info->last_changed = cur;
      return Value::Bool(true);
    });
  }
  return NoAttr(self, name);
}

// The Python attribute of a value, if any (methods, loop fields); nullopt-like via `found`.
Result<Value> PyAttr(const Value& obj, const std::string& name, bool* found) {
  *found = true;
  if (!name.empty() && name[0] == '_') {
    *found = false;
    return Value();
  }
  switch (obj.kind()) {
    case Value::Kind::kString:
      for (const char* m : kStrMethods) {
        if (name == m) return Bound(obj, name, StrMethod);
      }
      if (name == "encode" || name == "expandtabs" || name == "translate" || name == "maketrans" ||
          name == "isidentifier" || name == "isprintable" || name == "istitle" ||
          name == "isascii" || name == "format_map") {
        return Unsafe(obj, name);
      }
      break;
    case Value::Kind::kDict:
      if (name == "items" || name == "keys" || name == "values" || name == "get" ||
          name == "copy") {
        return Bound(obj, name, DictMethod);
      }
      if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" ||
          name == "clear" || name == "fromkeys") {
        return Unsafe(obj, name);
      }
      break;
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      if (name == "index" || name == "count" || (name == "copy" && obj.is_list())) {
        return Bound(obj, name, ListMethod);
      }
      if (obj.is_list() &&
          (name == "append" || name == "extend" || name == "insert" || name == "pop" ||
           name == "remove" || name == "reverse" || name == "sort" || name == "clear")) {
        return Unsafe(obj, name);
      }
      break;
    case Value::Kind::kLoop: {
      static const char* kLoopAttrs[] = {"index",    "index0", "revindex", "revindex0", "first",
                                         "last",     "length", "depth",    "depth0",    "previtem",
                                         "nextitem", "cycle",  "changed"};
      for (const char* m : kLoopAttrs) {
        if (name == m) return LoopAttr(obj, name);
      }
      break;
    }
    case Value::Kind::kNamespace: {
      const Value* v = obj.ns().attrs.FindStr(name);
      if (v) return *v;
      break;
    }
    default:
      break;
  }
  *found = false;
  return Value();
}

}  // namespace

Result<Value> GetAttr(Interp&, const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return TypeErr(obj.undefined_hint());
  bool found;
  JISU_ASSIGN_OR_RETURN(Value v, PyAttr(obj, name, &found));
  if (found) return v;
  if (obj.is_dict()) {
    const Value* item = obj.dict().FindStr(name);
    if (item) return *item;
  }
  return NoAttr(obj, name);
}

Result<Value> GetItem(Interp&, const Value& obj, const Value& key) {
  if (obj.is_undefined()) return TypeErr(obj.undefined_hint());
  switch (obj.kind()) {
    case Value::Kind::kDict: {
      if (key.is_list() || key.is_dict())
        return TypeErr("unhashable type: '" + TypeName(key) + "'");
      const Value* v = obj.dict().Find(key);
      if (v) return *v;
      break;
    }
    case Value::Kind::kList:
    case Value::Kind::kTuple:
    case Value::Kind::kString: {
      if (!key.is_integral()) break;
      int64_t i = key.i();
      if (obj.is_string()) {
        std::vector<uint32_t> cps = ToCodePoints(obj.s());
        int64_t n = int64_t(cps.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) {
          return Value::Undefined("str object has no element " + std::to_string(key.i()));
        }
        return Value::String(FromCodePoints(cps, size_t(i), size_t(i) + 1));
      }
      int64_t n = int64_t(obj.list().size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) {
        return Value::Undefined(TypeName(obj) + " object has no element " +
                                std::to_string(key.i()));
      }
      return obj.list()[size_t(i)];
    }
    default:
      break;
  }
  if (key.is_string()) {
    bool found;
    JISU_ASSIGN_OR_RETURN(Value v, PyAttr(obj, key.s(), &found));
    if (found) return v;
    return NoAttr(obj, key.s());
  }
  return Value::Undefined(ObjectTypeRepr(obj) + " has no element " + Repr(key));
}

Result<Value> GetSlice(Interp& in, const Value& obj, const Value& start, const Value& stop,
                       const Value& step) {
  auto idx = [](const Value& v, bool* none, int64_t* out) -> Status {
    if (v.is_none()) {
      *none = true;
      return Status::Ok();
    }
    if (!v.is_integral()) {
      return TypeErr("slice indices must be integers or None or have an __index__ method");
    }
    *none = false;
    *out = v.i();
    return Status::Ok();
  };
  bool n0 = true, n1 = true, n2 = true;
  int64_t a = 0, b = 0, st = 1;
  JISU_RETURN_IF_ERROR(idx(start, &n0, &a));
  JISU_RETURN_IF_ERROR(idx(stop, &n1, &b));
  JISU_RETURN_IF_ERROR(idx(step, &n2, &st));
  if (n2) st = 1;
  if (st == 0) return TypeErr("slice step cannot be zero");
  if (st == INT64_MIN) st = -INT64_MAX;
  if (!obj.is_string() && !obj.is_sequence()) {
    if (obj.is_dict()) return TypeErr("unhashable type: 'slice'");
    return NoAttr(obj, "slice");
  }
  std::vector<uint32_t> cps;
  int64_t len;
  if (obj.is_string()) {
    cps = ToCodePoints(obj.s());
    len = int64_t(cps.size());
  } else {
    len = int64_t(obj.list().size());
  }
  auto adjust = [&](bool none, int64_t v, bool is_start) -> int64_t {
    int64_t lower = st > 0 ? 0 : -1;
    int64_t upper = st > 0 ? len : len - 1;
    if (none) return is_start ? (st < 0 ? upper : lower) : (st < 0 ? lower : upper);
    if (v < 0) {
      v += len;
      if (v < lower) v = lower;
    } else if (v > upper) {
      v = upper;
    }
    return v;
  };
  int64_t s0 = adjust(n0, a, true), s1 = adjust(n1, b, false);
  std::vector<size_t> picks;
  if (st > 0) {
    for (int64_t i = s0; i < s1; i += st) {
      picks.push_back(size_t(i));
      if (st > len) break;
    }
  } else {
    for (int64_t i = s0; i > s1; i += st) {
      picks.push_back(size_t(i));
      if (-st > len) break;
    }
  }
  JISU_RETURN_IF_ERROR(in.Charge(picks.size() * 4));
  if (obj.is_string()) {
    std::string out;
    for (size_t i : picks) AppendUtf8(cps[i], &out);
    return Value::String(std::move(out));
  }
  List out;
  out.reserve(picks.size());
  for (size_t i : picks) out.push_back(obj.list()[i]);
  return obj.is_list() ? Value::MakeList(std::move(out)) : Value::MakeTuple(std::move(out));
}

// ---- globals

namespace {

Result<Dict> DictFromArgs(Interp& in, CallArgs& a, const char* fname) {
  Dict d;
  if (a.pos.size() > 1) {
    return TypeErr(std::string(fname) + " expected at most 1 argument, got " +
                   std::to_string(a.pos.size()));
  }
  if (a.pos.size() == 1) {
    const Value& src = a.pos[0];
    if (src.is_dict()) {
      d = src.dict();
    } else if (src.is_namespace()) {
      d = src.ns().attrs;
    } else {
      JISU_ASSIGN_OR_RETURN(List items, Iterate(src));
      for (const auto& it : items) {
        JISU_ASSIGN_OR_RETURN(List pair, Iterate(it));
        if (pair.size() != 2 || it.is_undefined()) {
          return TypeErr("dictionary update sequence element has length " +
                         std::to_string(pair.size()) + "; 2 is required");
        }
        if (pair[0].is_list() || pair[0].is_dict()) {
          return TypeErr("unhashable type: '" + TypeName(pair[0]) + "'");
        }
        // Dict::Set is linear; account for the quadratic build.
        JISU_RETURN_IF_ERROR(in.Charge(d.items.size() + 1));
        d.Set(pair[0], pair[1]);
      }
    }
  }
  for (const auto& [k, v] : a.kw) d.Set(Value::String(k), v);
  return d;
}

}  // namespace

void InstallGlobals(Scope& scope) {
  scope.Set(
      "range", MakeFn("range", [](Interp& in, CallArgs& a) -> Result<Value> {
        if (!a.kw.empty()) return TypeErr("range() takes no keyword arguments");
        if (a.pos.empty() || a.pos.size() > 3) {
          return TypeErr("range expected at least 1 argument, got " + std::to_string(a.pos.size()));
        }
        int64_t start = 0, stop, step = 1;
        for (const auto& v : a.pos) {
          if (!v.is_integral()) {
            return TypeErr("'" + TypeName(v) + "' object cannot be interpreted as an integer");
          }
        }
        if (a.pos.size() == 1) {
          stop = a.pos[0].i();
        } else {
          start = a.pos[0].i();
          stop = a.pos[1].i();
          if (a.pos.size() == 3) step = a.pos[2].i();
        }
        if (step == 0) return TypeErr("range() arg 3 must not be zero");
        __int128 n = 0;
        if (step > 0 && stop > start) n = ((__int128)stop - start + step - 1) / step;
        if (step < 0 && stop < start) n = ((__int128)start - stop - step - 1) / (-(__int128)step);
        if (n > 100000) {
          return Status::InvalidArgument(
              "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        }
        JISU_RETURN_IF_ERROR(in.Charge(size_t(n) * 16));
        List out;
        for (int64_t i = 0; i < int64_t(n); ++i) out.push_back(Value::Int(start + i * step));
        return Value::MakeList(std::move(out));
      }));
  scope.Set("namespace", MakeFn("namespace", [](Interp& in, CallArgs& a) -> Result<Value> {
              JISU_ASSIGN_OR_RETURN(Dict d, DictFromArgs(in, a, "namespace"));
              for (const auto& [k, v] : d.items) {
                if (k.is_string() && !k.s().empty() && k.s()[0] == '_') {
                  return TypeErr(
                      "Chat templates cannot store underscore-prefixed attributes on a "
                      "namespace, but got '" +
                      k.s() + "'. Please rename the attribute.");
                }
              }
              auto ns = std::make_shared<Namespace>();
              ns->attrs = std::move(d);
              in.Track(ns);
              return Value::MakeNamespace(std::move(ns));
            }));
  scope.Set("dict", MakeFn("dict", [](Interp& in, CallArgs& a) -> Result<Value> {
              JISU_ASSIGN_OR_RETURN(Dict d, DictFromArgs(in, a, "dict"));
              return Value::MakeDict(std::move(d));
            }));
  scope.Set("raise_exception", MakeFn("raise_exception", [](Interp&, CallArgs& a) -> Result<Value> {
              if (a.pos.size() != 1 || !a.kw.empty()) {
                return TypeErr("raise_exception() takes exactly one argument");
              }
              return Status::InvalidArgument(Str(a.pos[0]));
            }));
  scope.Set("strftime_now", MakeFn("strftime_now", [](Interp&, CallArgs& a) -> Result<Value> {
              if (a.pos.size() != 1 || !a.kw.empty() || !a.pos[0].is_string()) {
                return TypeErr("strftime_now() takes one string argument");
              }
              std::time_t t = std::time(nullptr);
              std::tm tm{};
              localtime_r(&t, &tm);
              const std::string& fmt = a.pos[0].s();
              if (fmt.empty()) return Value::String("");
              if (fmt.size() > 1024) return TypeErr("strftime_now: format too long");
              std::vector<char> buf(fmt.size() * 16 + 256);
              size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
              return Value::String(std::string(buf.data(), n));
            }));
  scope.Set("joiner", MakeFn("joiner", [](Interp&, CallArgs& a) -> Result<Value> {
              BIND(b, "joiner", a, "sep");
              std::string sep = b.Get(0) ? Str(*b.Get(0)) : ", ";
              auto used = std::make_shared<bool>(false);
              return MakeFn("joiner", [sep, used](Interp&, CallArgs&) -> Result<Value> {
                if (!*used) {
                  *used = true;
                  return Value::String("");
                }
                return Value::String(sep);
              });
            }));
}

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
