// Dynamic values of the Jinja interpreter, modelled on the Python objects jinja2 works with:
// undefined, None, bool, int, float, str, list, tuple, dict, namespace, callables, the loop
// object, and iterators: the one-pass generators jinja2's map, select, reject, selectattr,
// rejectattr, unique, items and batch filters return (and reverse's reversed()), which are
// always true, have no len(), cannot be indexed or passed to tojson, and are empty once
// iterated (their items are computed eagerly; only what Python observes is modelled). Lists, tuples
// and dicts are immutable once built (the sandbox transformers uses forbids mutating them) and
// shared by pointer; namespaces are the only mutable values. Strings are UTF-8; operations that
// Python defines on code points (len, indexing, slicing) decode on demand. Printing follows
// Python's str()/repr(); tojson follows json.dumps. Integers are 64-bit (Python's are unbounded):
// overflow is reported as an error.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "jisu/status.h"

namespace jisu::jinja {

class Value;
class Interp;
struct Dict;
struct Namespace;
struct Callable;
struct LoopInfo;
struct IteratorState;

using List = std::vector<Value>;

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kTuple,
    kDict,
    kNamespace,
    kCallable,
    kLoop,
    kIterator,
  };

  Value() = default;  // undefined, no hint
  static Value Undefined(std::string hint) {
    Value v;
    v.data_ = std::move(hint);
    return v;
  }
  static Value None() { return Value(Kind::kNone, std::monostate()); }
  static Value Bool(bool b) { return Value(Kind::kBool, b); }
  static Value Int(int64_t i) { return Value(Kind::kInt, i); }
  static Value Float(double d) { return Value(Kind::kFloat, d); }
  static Value String(std::string s) { return Value(Kind::kString, std::move(s)); }
  // markupsafe's Markup (what |safe and |escape return): a string that, added to a plain
  // string, HTML-escapes the plain one (jinja_operators.cc). Only + and * keep the mark.
  static Value Markup(std::string s) {
    Value v = String(std::move(s));
    v.markup_ = true;
    return v;
  }
  static Value MakeList(List items);
  static Value MakeTuple(List items);
  static Value MakeDict(Dict d);
  static Value MakeNamespace(std::shared_ptr<Namespace> ns) {
    return Value(Kind::kNamespace, std::move(ns));
  }
  static Value MakeCallable(std::shared_ptr<Callable> fn) {
    return Value(Kind::kCallable, std::move(fn));
  }
  static Value MakeLoop(std::shared_ptr<LoopInfo> loop) {
    return Value(Kind::kLoop, std::move(loop));
  }
  // An iterator over `items`; `type_name` is its Python type ("generator", ...).
  static Value MakeIterator(List items, std::string type_name);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_markup() const { return markup_; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  bool is_sequence() const { return kind_ == Kind::kList || kind_ == Kind::kTuple; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }
  bool is_loop() const { return kind_ == Kind::kLoop; }
  bool is_iterator() const { return kind_ == Kind::kIterator; }
  // Python's numbers.Number: bool counts, as bool is a subclass of int.
  bool is_number() const {
    return kind_ == Kind::kBool || kind_ == Kind::kInt || kind_ == Kind::kFloat;
  }
  bool is_integral() const { return kind_ == Kind::kBool || kind_ == Kind::kInt; }

  bool b() const { return std::get<bool>(data_); }
  // The integer value of a bool or int.
  int64_t i() const { return kind_ == Kind::kBool ? (b() ? 1 : 0) : std::get<int64_t>(data_); }
  // The value of any number as a double.
  double f() const { return kind_ == Kind::kFloat ? std::get<double>(data_) : double(i()); }
  const std::string& s() const { return std::get<std::string>(data_); }
  // For an undefined value: the message an operation on it reports ("'x' is undefined").
  const std::string& undefined_hint() const { return std::get<std::string>(data_); }
  const List& list() const { return *std::get<std::shared_ptr<const List>>(data_); }
  const std::shared_ptr<const List>& list_ptr() const {
    return std::get<std::shared_ptr<const List>>(data_);
  }
  const Dict& dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  Namespace& ns() const { return *std::get<std::shared_ptr<Namespace>>(data_); }
  const std::shared_ptr<Namespace>& ns_ptr() const {
    return std::get<std::shared_ptr<Namespace>>(data_);
  }
  const Callable& fn() const { return *std::get<std::shared_ptr<Callable>>(data_); }
  const LoopInfo& loop() const { return *std::get<std::shared_ptr<LoopInfo>>(data_); }
  const std::shared_ptr<LoopInfo>& loop_ptr() const {
    return std::get<std::shared_ptr<LoopInfo>>(data_);
  }
  // Iterators are the one other mutable value: iterating consumes them.
  IteratorState& iter() const { return *std::get<std::shared_ptr<IteratorState>>(data_); }
  // Identity of a shared object (namespaces, callables), for `is sameas` and ==.
  const void* identity() const;

 private:
  using Data = std::variant<std::monostate, bool, int64_t, double, std::string,
                            std::shared_ptr<const List>, std::shared_ptr<const Dict>,
                            std::shared_ptr<Namespace>, std::shared_ptr<Callable>,
                            std::shared_ptr<LoopInfo>, std::shared_ptr<IteratorState>>;
  template <typename T>
  Value(Kind k, T&& d) : kind_(k), data_(std::forward<T>(d)) {}

  Kind kind_ = Kind::kUndefined;
  bool markup_ = false;
  Data data_ = std::string();
};

// An insertion-ordered mapping with Python key equality (1 == 1.0 == True). Lookups are
// linear: template dicts are small.
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  const Value* Find(const Value& key) const;
  const Value* FindStr(std::string_view key) const;
  void Set(Value key, Value value);  // replaces in place or appends
};

struct Namespace {
  Dict attrs;
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

// A builtin function, bound method or macro.
struct Callable {
  std::string name;
  std::function<Result<Value>(Interp&, CallArgs&)> fn;
};

struct IteratorState {
  List items;
  size_t next = 0;  // items before it were consumed
  std::string type_name;
  // The items not yet consumed, consuming them.
  List Take() {
    List rest(items.begin() + static_cast<std::ptrdiff_t>(next), items.end());
    next = items.size();
    return rest;
  }
};

// The `loop` variable of a for loop.
struct LoopInfo {
  std::shared_ptr<const List> items;
  int64_t index0 = 0;
  int64_t depth0 = 0;
  Value last_changed;  // state of loop.changed()
  bool changed_called = false;
};

// Python truthiness.
bool Truthy(const Value& v);
// Python ==, as jinja2 uses it (undefined equals only undefined).
bool Equals(const Value& a, const Value& b);
// Python <, <=, >, >= ordering: -1/0/1, or a TypeError-like Status naming `op`.
Result<int> Compare(const Value& a, const Value& b, const char* op);
// Python str() of a value as Jinja prints it (undefined prints as "").
std::string Str(const Value& v);
// Python repr().
std::string Repr(const Value& v);
// Python float repr ("1.0", "1e+16", "inf").
std::string FormatFloat(double d);
// The Python type name ("str", "dict", "NoneType", ...).
std::string TypeName(const Value& v);
// jinja2's object_type_repr ("dict object", "None").
std::string ObjectTypeRepr(const Value& v);

struct JsonOptions {
  std::string indent;  // used when has_indent
  bool has_indent = false;
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};
// json.dumps with the given options; TypeError-like Status for unserializable values.
Result<std::string> ToJson(const Value& v, const JsonOptions& options, size_t max_bytes);

// JSON input (messages, tools, ...) as template values; object key order is kept.
Result<Value> FromJson(const nlohmann::ordered_json& j, int depth = 0);

// ---- UTF-8 helpers (strings are treated as sequences of code points, like Python's str).
// Decodes the code point at s[*pos] and advances *pos; invalid bytes decode as themselves
// (one byte, value 0xDC80+byte, like Python's surrogateescape) so nothing is ever lost.
uint32_t DecodeUtf8(std::string_view s, size_t* pos);
void AppendUtf8(uint32_t cp, std::string* out);
size_t CodePointCount(std::string_view s);
std::vector<uint32_t> ToCodePoints(std::string_view s);
std::string FromCodePoints(const std::vector<uint32_t>& cps, size_t begin, size_t end);
// str.isspace() for a code point.
bool IsPySpace(uint32_t cp);

}  // namespace jisu::jinja
