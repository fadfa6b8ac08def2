// The names a chat template can use besides its own: filters, tests, attribute and item
// access on values (Python methods of str/dict/list bound as callables, with the mutating
// ones refused like jinja2's ImmutableSandboxedEnvironment does), arithmetic with Python
// semantics, and the globals transformers defines (range, namespace, dict, raise_exception,
// strftime_now, joiner, cycler). Implemented across jinja_builtins.cc (filter and test lookup,
// the tests), jinja_filters_text.cc, jinja_filters_sequence.cc, jinja_operators.cc,
// jinja_attributes.cc, jinja_str_methods.cc and jinja_globals.cc.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include "chat/jinja_interp.h"
#include "chat/jinja_value.h"
#include "jisu/status.h"

namespace jisu::jinja {

Result<Value> ApplyFilter(Interp& in, const std::string& name, const Value& subject,
                          CallArgs& args);
Result<bool> ApplyTest(Interp& in, const std::string& name, const Value& subject, CallArgs& args);
bool HasFilter(const std::string& name);
bool HasTest(const std::string& name);

// jinja2's environment.getattr / getitem (obj.name, obj[key]); missing -> Undefined.
Result<Value> GetAttr(Interp& in, const Value& obj, const std::string& name);
Result<Value> GetItem(Interp& in, const Value& obj, const Value& key);
// obj[start:stop:step]; each bound may be None.
Result<Value> GetSlice(Interp& in, const Value& obj, const Value& start, const Value& stop,
                       const Value& step);

// Binary operators + - * / // % ** with Python semantics.
Result<Value> BinaryOp(Interp& in, const std::string& op, const Value& a, const Value& b);
// `a in b`.
Result<bool> Contains(const Value& container, const Value& item);

// Defines the global functions in `scope`. strftime_now formats `now` (a local time) when given,
// else the current local time.
void InstallGlobals(Scope& scope, const std::optional<std::tm>& now);

// Escapes & < > " ' like markupsafe.escape.
std::string HtmlEscape(const std::string& s);

}  // namespace jisu::jinja
