// Helpers shared by the files that implement jinja_builtins.h, and by no one else: Python-style
// argument binding for filters and methods (Args / BIND), the small value conversions they all
// use, and the seams between those files (each filter file registers its filters into the table
// that jinja_builtins.cc looks names up in; jinja_attributes.cc exposes the Python attribute
// lookup that the `attr` filter needs; jinja_str_methods.cc exposes the str methods).
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/jinja_interp.h"
#include "chat/jinja_strings.h"
#include "chat/jinja_value.h"
#include "jisu/status.h"

namespace jisu::jinja::builtins {

inline Status TypeErr(const std::string& m) { return Status::InvalidArgument(m); }

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

#define BIND(var, fname, args, ...)                              \
  ::jisu::jinja::builtins::Args var(fname, args, {__VA_ARGS__}); \
  JISU_RETURN_IF_ERROR(var.status())

inline Result<int64_t> ToIndex(const Value& v, const char* what) {
  if (v.is_integral()) return v.i();
  return TypeErr(std::string("'") + TypeName(v) + "' object cannot be interpreted as an integer (" +
                 what + ")");
}

inline Result<std::string> ToStr(const Value& v, const char* what) {
  if (v.is_string()) return v.s();
  return TypeErr(std::string(what) + " must be str, not " + TypeName(v));
}

inline Value StrList(const std::vector<std::string>& parts) {
  List l;
  l.reserve(parts.size());
  for (const auto& p : parts) l.push_back(Value::String(p));
  return Value::MakeList(std::move(l));
}

inline Result<size_t> Length(const Value& v) {
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

inline Value MakeFn(std::string name, std::function<Result<Value>(Interp&, CallArgs&)> fn) {
  auto c = std::make_shared<Callable>();
  c->name = std::move(name);
  c->fn = std::move(fn);
  return Value::MakeCallable(std::move(c));
}

// A filter: subject | name(args).
using FilterFn = Result<Value> (*)(Interp&, const Value&, CallArgs&);
using FilterTable = std::unordered_map<std::string, FilterFn>;

// jinja_filters_text.cc: string and number filters.
void AddTextFilters(FilterTable* table);
// jinja_filters_sequence.cc: filters over sequences, mappings and objects.
void AddSequenceFilters(FilterTable* table);

// jinja_attributes.cc: the Python attribute of a value, if any (methods, loop fields), with
// `found` false when there is none; and the Undefined jinja2 gives for a missing attribute.
Result<Value> PyAttr(const Value& obj, const std::string& name, bool* found);
Value NoAttr(const Value& obj, const std::string& name);

// jinja_str_methods.cc: whether `name` is a str method templates may call, and the call.
bool IsStrMethod(const std::string& name);
Result<Value> StrMethod(Interp& in, const Value& self, const std::string& m, CallArgs& a);

}  // namespace jisu::jinja::builtins
