// Attribute, item and slice access on chat-template values (obj.name, obj[key],
// obj[a:b:c]) with jinja2's sandboxed lookup order: Python attributes first (str, dict and
// list methods bound to their receiver, loop.* fields, namespace attributes), then items;
// the methods that mutate are refused as unsafe, like ImmutableSandboxedEnvironment. The str
// methods themselves are in jinja_str_methods.cc.
#include "chat/jinja_builtins.h"
#include "chat/jinja_builtins_internal.h"
#include "chat/jinja_strings.h"

namespace jisu::jinja {
using builtins::Args;
using builtins::IsStrMethod;
using builtins::MakeFn;
using builtins::NoAttr;
using builtins::PyAttr;
using builtins::StrMethod;
using builtins::TypeErr;

namespace {

Value Unsafe(const Value& obj, const std::string& name) {
  return Value::Undefined("access to attribute '" + name + "' of '" + TypeName(obj) +
                          "' object is unsafe.");
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

}  // namespace

namespace builtins {

// The Python attribute of a value, if any (methods, loop fields); nullopt-like via `found`.
Result<Value> PyAttr(const Value& obj, const std::string& name, bool* found) {
  *found = true;
  if (!name.empty() && name[0] == '_') {
    *found = false;
    return Value();
  }
  switch (obj.kind()) {
    case Value::Kind::kString:
      if (IsStrMethod(name)) return Bound(obj, name, StrMethod);
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

Value NoAttr(const Value& obj, const std::string& name) {
  return Value::Undefined("'" + ObjectTypeRepr(obj) + "' has no attribute '" + name + "'");
}

}  // namespace builtins

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
}  // namespace jisu::jinja
