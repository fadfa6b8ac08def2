// The global functions transformers defines for chat templates: range (with the sandbox's
// MAX_RANGE), namespace, dict, raise_exception, strftime_now and joiner, installed into the
// template's global scope by InstallGlobals.
#include <ctime>

#include "chat/jinja_builtins.h"
#include "chat/jinja_builtins_internal.h"

namespace jisu::jinja {
using builtins::Args;
using builtins::MakeFn;
using builtins::TypeErr;

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

void InstallGlobals(Scope& scope, const std::optional<std::tm>& now) {
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
  scope.Set("strftime_now", MakeFn("strftime_now", [now](Interp&, CallArgs& a) -> Result<Value> {
              if (a.pos.size() != 1 || !a.kw.empty() || !a.pos[0].is_string()) {
                return TypeErr("strftime_now() takes one string argument");
              }
              std::tm tm{};
              if (now) {
                tm = *now;
              } else {
                std::time_t t = std::time(nullptr);
                localtime_r(&t, &tm);
              }
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
}  // namespace jisu::jinja
