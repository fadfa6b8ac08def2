// The chat-template filters over sequences, mappings and objects: default, length/count, list,
// first, last, join, items, dictsort, sort, reverse, unique, min, max, sum, attr, batch, select,
// reject, selectattr, rejectattr, map; with jinja2's attribute paths ("a.b.0") and the stable
// Python-ordered sort they share. String and number filters are in jinja_filters_text.cc.
#include <algorithm>

#include "chat/jinja_builtins.h"
#include "chat/jinja_builtins_internal.h"
#include "chat/jinja_strings.h"

namespace jisu::jinja {
using builtins::Args;
using builtins::FilterTable;
using builtins::Length;
using builtins::NoAttr;
using builtins::PyAttr;
using builtins::ToIndex;
using builtins::TypeErr;

namespace {

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

// ---- filters

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

Result<Value> FFirst(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "first", a);
  if (v.is_iterator()) {  // next(iter(v)): takes one item
    IteratorState& it = v.iter();
    if (it.next == it.items.size()) return Value::Undefined("No first item, sequence was empty.");
    return it.items[it.next++];
  }
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  if (l.empty()) return Value::Undefined("No first item, sequence was empty.");
  return l.front();
}

Result<Value> FLast(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "last", a);
  if (v.is_iterator()) return TypeErr("'" + TypeName(v) + "' object is not reversible");
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

Result<Value> FItems(Interp&, const Value& v, CallArgs& a) {
  BIND(b, "items", a);
  if (v.is_undefined()) return Value::MakeIterator({}, "generator");
  if (!v.is_dict()) return TypeErr("Can only get item pairs from a mapping.");
  List out;
  for (const auto& [k, val] : v.dict().items) out.push_back(Value::MakeTuple({k, val}));
  return Value::MakeIterator(std::move(out), "generator");
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
  // reversed() where Python has it (an iterator), else a reversed list.
  const char* reversed = v.is_list()    ? "list_reverseiterator"
                         : v.is_tuple() ? "reversed"
                         : v.is_dict()  ? "dict_reversekeyiterator"
                                        : nullptr;
  JISU_ASSIGN_OR_RETURN(List l, Iterate(v));
  std::reverse(l.begin(), l.end());
  if (reversed != nullptr) return Value::MakeIterator(std::move(l), reversed);
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
  return Value::MakeIterator(std::move(out), "generator");
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
  return Value::MakeIterator(std::move(out), "generator");
}

// select / reject / selectattr / rejectattr
// Like map, a generator that looks at its arguments only when the value is true (jinja2's
// `if value:`), so None or undefined give an empty one.
Result<Value> SelectImpl(Interp& in, const Value& v, CallArgs& a, bool attr, bool want) {
  if (!Truthy(v)) return Value::MakeIterator({}, "generator");
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
  return Value::MakeIterator(std::move(out), "generator");
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
  if (!Truthy(v)) return Value::MakeIterator({}, "generator");
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
    return Value::MakeIterator(std::move(out), "generator");
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
  return Value::MakeIterator(std::move(out), "generator");
}

}  // namespace

namespace builtins {

void AddSequenceFilters(FilterTable* t) {
  t->insert({
      {"attr", FAttr},
      {"batch", FBatch},
      {"count", FLength},
      {"d", FDefault},
      {"default", FDefault},
      {"dictsort", FDictSort},
      {"first", FFirst},
      {"items", FItems},
      {"join", FJoin},
      {"last", FLast},
      {"length", FLength},
      {"list", FList},
      {"map", FMap},
      {"max", FMax},
      {"min", FMin},
      {"reject", FReject},
      {"rejectattr", FRejectAttr},
      {"reverse", FReverse},
      {"select", FSelect},
      {"selectattr", FSelectAttr},
      {"sort", FSort},
      {"sum", FSum},
      {"unique", FUnique},
  });
}

}  // namespace builtins

}  // namespace jisu::jinja
