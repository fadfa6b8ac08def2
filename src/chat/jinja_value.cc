#include "chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/utf8.h"

namespace jisu::jinja {

Value Value::MakeList(List items) {
  return Value(Kind::kList, std::shared_ptr<const List>(std::make_shared<List>(std::move(items))));
}
Value Value::MakeTuple(List items) {
  return Value(Kind::kTuple, std::shared_ptr<const List>(std::make_shared<List>(std::move(items))));
}
Value Value::MakeDict(Dict d) {
  return Value(Kind::kDict, std::shared_ptr<const Dict>(std::make_shared<Dict>(std::move(d))));
}

Value Value::MakeIterator(List items, std::string type_name) {
  auto state = std::make_shared<IteratorState>();
  state->items = std::move(items);
  state->type_name = std::move(type_name);
  return Value(Kind::kIterator, std::move(state));
}

const void* Value::identity() const {
  switch (kind_) {
    case Kind::kList:
    case Kind::kTuple:
      return list_ptr().get();
    case Kind::kDict:
      return std::get<std::shared_ptr<const Dict>>(data_).get();
    case Kind::kNamespace:
      return ns_ptr().get();
    case Kind::kCallable:
      return std::get<std::shared_ptr<Callable>>(data_).get();
    case Kind::kLoop:
      return loop_ptr().get();
    case Kind::kIterator:
      return std::get<std::shared_ptr<IteratorState>>(data_).get();
    default:
      return nullptr;
  }
}

const Value* Dict::Find(const Value& key) const {
  for (const auto& [k, v] : items) {
    if (Equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* Dict::FindStr(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.s() == key) return &v;
  }
  return nullptr;
}

void Dict::Set(Value key, Value value) {
  for (auto& [k, v] : items) {
    if (Equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

bool Truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.b();
    case Value::Kind::kInt:
      return v.i() != 0;
    case Value::Kind::kFloat:
      return v.f() != 0.0;
    case Value::Kind::kString:
      return !v.s().empty();
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      return !v.list().empty();
    case Value::Kind::kDict:
      return !v.dict().items.empty();
    default:
      return true;
  }
}

bool Equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.f() == b.f();
    return a.i() == b.i();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.s() == b.s();
    case Value::Kind::kList:
    case Value::Kind::kTuple: {
      const List& x = a.list();
      const List& y = b.list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!Equals(x[i], y[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      const Dict& x = a.dict();
      const Dict& y = b.dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.Find(k);
        if (other == nullptr || !Equals(v, *other)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

namespace {

Status TypeError(const std::string& msg) { return Status::InvalidArgument(msg); }

}  // namespace

Result<int> Compare(const Value& a, const Value& b, const char* op) {
  if (a.is_undefined()) return TypeError(a.undefined_hint());
  if (b.is_undefined()) return TypeError(b.undefined_hint());
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.f(), y = b.f();
      // NaN compares false everywhere; report "equal" only for ==-like callers, so map
      // NaN to a value that makes <, <=, >, >= all false is impossible with -1/0/1: treat
      // as unordered by returning 2.
      if (std::isnan(x) || std::isnan(y)) return 2;
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    return a.i() < b.i() ? -1 : (a.i() > b.i() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order equals code point order.
    int c = a.s().compare(b.s());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if ((a.is_list() && b.is_list()) || (a.is_tuple() && b.is_tuple())) {
    const List& x = a.list();
    const List& y = b.list();
    size_t n = std::min(x.size(), y.size());
    for (size_t i = 0; i < n; ++i) {
      if (Equals(x[i], y[i])) continue;
      return Compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return TypeError(std::string("'") + op + "' not supported between instances of '" + TypeName(a) +
                   "' and '" + TypeName(b) + "'");
}

std::string FormatFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci looks like "-1.2345e+05": split into sign, digits and exponent.
  bool neg = sci[0] == '-';
  size_t start = neg ? 1 : 0;
  size_t e = sci.find('e');
  std::string digits;
  for (size_t i = start; i < e; ++i) {
    if (sci[i] != '.') digits.push_back(sci[i]);
  }
  int exp = std::atoi(sci.c_str() + e + 1);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = neg ? "-" : "";
  // Python's repr uses scientific notation when exp < -4 or exp >= 16.
  if (exp < -4 || exp >= 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
    return out;
  }
  if (exp < 0) {
    out += "0.";
    out.append(size_t(-exp - 1), '0');
    out += digits;
    return out;
  }
  // exp >= 0: integer part is digits[0..exp].
  if (digits.size() <= size_t(exp) + 1) {
    out += digits;
    out.append(size_t(exp) + 1 - digits.size(), '0');
    out += ".0";
  } else {
    out += digits.substr(0, size_t(exp) + 1);
    out += '.';
    out += digits.substr(size_t(exp) + 1);
  }
  return out;
}

// ---- UTF-8

uint32_t DecodeUtf8(std::string_view s, size_t* pos) {
  size_t p = *pos;
  unsigned char c = static_cast<unsigned char>(s[p]);
  auto bad = [&]() {
    *pos = p + 1;
    return uint32_t(0xDC00 + c);
  };
  if (c < 0x80) {
    *pos = p + 1;
    return c;
  }
  int n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) {
    n = 1;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 2;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 3;
    cp = c & 0x07;
  } else {
    return bad();
  }
  if (p + n >= s.size()) return bad();
  for (int k = 1; k <= n; ++k) {
    unsigned char cc = static_cast<unsigned char>(s[p + k]);
    if ((cc & 0xC0) != 0x80) return bad();
    cp = (cp << 6) | (cc & 0x3F);
  }
  // Reject overlong forms, surrogates and out-of-range values.
  if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
      cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return bad();
  }
  *pos = p + 1 + n;
  return cp;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {  // an undecodable byte, restored as is
    out->push_back(static_cast<char>(cp - 0xDC00));
  } else {
    utf8::Append(out, static_cast<char32_t>(cp));
  }
}

size_t CodePointCount(std::string_view s) {
  size_t n = 0;
  for (size_t p = 0; p < s.size();) {
    DecodeUtf8(s, &p);
    ++n;
  }
  return n;
}

std::vector<uint32_t> ToCodePoints(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t p = 0; p < s.size();) out.push_back(DecodeUtf8(s, &p));
  return out;
}

std::string FromCodePoints(const std::vector<uint32_t>& cps, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) AppendUtf8(cps[i], &out);
  return out;
}

bool IsPySpace(uint32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
  if (cp < 0x80) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

namespace {

// Code points Python's repr escapes: not "printable" (controls, format characters, separators
// other than space, private use). Unassigned code points are not tracked.
bool IsPyNonPrintable(uint32_t cp) {
  if (cp < 0x20 || cp == 0x7F) return true;
  if (cp < 0xA0) return cp >= 0x80;
  if (cp == 0xA0 || cp == 0xAD) return true;
  if (IsPySpace(cp)) return true;
  if ((cp >= 0x600 && cp <= 0x605) || cp == 0x61C || cp == 0x6DD || cp == 0x70F || cp == 0x180E ||
      (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
      (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x206F) || cp == 0xFEFF ||
      (cp >= 0xFFF9 && cp <= 0xFFFB) || cp == 0xFFFE || cp == 0xFFFF || cp == 0xE0001 ||
      (cp >= 0xE0020 && cp <= 0xE007F)) {
    return true;
  }
  if ((cp >= 0xD800 && cp <= 0xF8FF) || cp >= 0xF0000) return true;  // surrogates, private use
  return false;
}

void AppendStrRepr(const std::string& s, std::string* out) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  out->push_back(quote);
  for (size_t p = 0; p < s.size();) {
    uint32_t cp = DecodeUtf8(s, &p);
    char buf[16];
    if (cp == uint32_t(quote) || cp == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(cp));
    } else if (cp == '\t') {
      *out += "\\t";
    } else if (cp == '\n') {
      *out += "\\n";
    } else if (cp == '\r') {
      *out += "\\r";
    } else if (IsPyNonPrintable(cp)) {
      if (cp >= 0xDC80 && cp <= 0xDCFF) {
        std::snprintf(buf, sizeof(buf), "\\udc%02x", cp & 0xFF);
      } else if (cp < 0x100) {
        std::snprintf(buf, sizeof(buf), "\\x%02x", cp);
      } else if (cp < 0x10000) {
        std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      } else {
        std::snprintf(buf, sizeof(buf), "\\U%08x", cp);
      }
      *out += buf;
    } else {
      AppendUtf8(cp, out);
    }
  }
  out->push_back(quote);
}

void AppendRepr(const Value& v, std::string* out, int depth);

void AppendSeqRepr(const List& items, std::string* out, int depth) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) *out += ", ";
    AppendRepr(items[i], out, depth + 1);
  }
}

void AppendDictRepr(const Dict& d, std::string* out, int depth) {
  out->push_back('{');
  for (size_t i = 0; i < d.items.size(); ++i) {
    if (i) *out += ", ";
    AppendRepr(d.items[i].first, out, depth + 1);
    *out += ": ";
    AppendRepr(d.items[i].second, out, depth + 1);
  }
  out->push_back('}');
}

void AppendRepr(const Value& v, std::string* out, int depth) {
  if (depth > 64) {  // Python prints recursive structures as [...]
    *out += "...";
    return;
  }
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      *out += "Undefined";
      return;
    case Value::Kind::kString:
      AppendStrRepr(v.s(), out);
      return;
    case Value::Kind::kList:
      out->push_back('[');
      AppendSeqRepr(v.list(), out, depth);
      out->push_back(']');
      return;
    case Value::Kind::kTuple:
      out->push_back('(');
      AppendSeqRepr(v.list(), out, depth);
      if (v.list().size() == 1) out->push_back(',');
      out->push_back(')');
      return;
    case Value::Kind::kDict:
      AppendDictRepr(v.dict(), out, depth);
      return;
    case Value::Kind::kNamespace:
      *out += "<Namespace ";
      AppendDictRepr(v.ns().attrs, out, depth);
      *out += ">";
      return;
    default:
      *out += Str(v);
      return;
  }
}

}  // namespace

std::string Str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.b() ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(v.i());
    case Value::Kind::kFloat:
      return FormatFloat(v.f());
    case Value::Kind::kString:
      return v.s();
    case Value::Kind::kCallable:
      return "<function " + v.fn().name + ">";
    case Value::Kind::kLoop:
      return "<LoopContext>";
    case Value::Kind::kIterator: {  // the address is Python's; any one will do
      char addr[32];
      std::snprintf(addr, sizeof addr, "%p", v.identity());
      return "<" + v.iter().type_name + " object at " + addr + ">";
    }
    default: {
      std::string out;
      AppendRepr(v, &out, 0);
      return out;
    }
  }
}

std::string Repr(const Value& v) {
  std::string out;
  AppendRepr(v, &out, 0);
  return out;
}

std::string TypeName(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return "str";
    case Value::Kind::kList:
      return "list";
    case Value::Kind::kTuple:
      return "tuple";
    case Value::Kind::kDict:
      return "dict";
    case Value::Kind::kNamespace:
      return "Namespace";
    case Value::Kind::kCallable:
      return "function";
    case Value::Kind::kLoop:
      return "LoopContext";
    case Value::Kind::kIterator:
      return v.iter().type_name;
  }
  return "object";
}

std::string ObjectTypeRepr(const Value& v) {
  if (v.is_none()) return "None";
  return TypeName(v) + " object";
}

}  // namespace jisu::jinja
