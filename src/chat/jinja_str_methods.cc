// The Python str methods a chat template may call on a string (s.strip(), s.split(),
// s.startswith(), s.format(), s.isdigit(), s.partition(), ...): their argument binding and
// results, built on the Python str semantics of jinja_strings.h. jinja_attributes.cc binds
// them to their receiver on attribute access.
#include "chat/jinja_builtins.h"
#include "chat/jinja_builtins_internal.h"
#include "chat/jinja_strings.h"

namespace jisu::jinja {
namespace builtins {

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

namespace {

const char* kStrMethods[] = {"strip",      "lstrip",       "rstrip",      "split",     "rsplit",
                             "splitlines", "startswith",   "endswith",    "upper",     "lower",
                             "title",      "capitalize",   "swapcase",    "casefold",  "replace",
                             "find",       "rfind",        "index",       "rindex",    "count",
                             "join",       "format",       "isdigit",     "isdecimal", "isnumeric",
                             "isalpha",    "isalnum",      "isspace",     "isupper",   "islower",
                             "center",     "ljust",        "rjust",       "zfill",     "partition",
                             "rpartition", "removeprefix", "removesuffix"};

}  // namespace

bool IsStrMethod(const std::string& name) {
  for (const char* m : kStrMethods) {
    if (name == m) return true;
  }
  return false;
}

}  // namespace builtins

}  // namespace jisu::jinja
