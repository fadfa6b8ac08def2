// Evaluator of a parsed Jinja template with jinja2's runtime semantics as transformers
// configures them: default Undefined (prints empty, fails on arithmetic/attribute access),
// per-iteration scopes in for loops, namespaces as the only way to carry state out of loops,
// macros and call blocks, loop controls. A template is untrusted input, so every render is
// bounded: steps (statements, iterations, calls), call depth, the size of any value and of the
// output, and the total bytes produced by string operations. Exceeding a bound is an error,
// never a crash.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_value.h"
#include "jisu/status.h"

namespace jisu::jinja {

struct Limits {
  uint64_t max_steps = 4'000'000;        // statements + loop iterations + calls
  int max_call_depth = 100;              // nested macro / function calls
  int max_nesting = 1000;                // evaluation depth (statements + expressions)
  size_t max_value_bytes = 64u << 20;    // any single string (and the output)
  size_t max_list_items = 4u << 20;      // any single list
  uint64_t max_work_bytes = 4ull << 30;  // bytes produced by string operations, in total
};

// A variable scope. Lookups fall through to the parent; assignments stay local.
class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  const Value* Lookup(const std::string& name) const;
  void Set(const std::string& name, Value v);
  const std::shared_ptr<Scope>& parent() const { return parent_; }

 private:
  std::shared_ptr<Scope> parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};

// Marks a Status as a syntax/runtime error that already names its template position.
inline constexpr const char* kErrorPrefix = "chat template error at line ";

class Interp {
 public:
  Interp(const std::string& source, const Limits& limits) : src_(source), limits_(limits) {}
  ~Interp();

  // Renders `body` with `globals` as the outermost scope.
  Result<std::string> Render(const Body& body, std::shared_ptr<Scope> globals);

  // ---- services for builtins
  Result<Value> Call(const Value& fn, CallArgs& args);
  // Accounts for `bytes` of produced data; fails once the work budget is spent.
  Status Charge(size_t bytes);
  Status CheckString(size_t bytes) const;
  Status CheckList(size_t items) const;
  // Registers a namespace so its contents can be released after the render (namespaces may
  // reference themselves, which shared pointers alone would leak).
  void Track(const std::shared_ptr<Namespace>& ns) { namespaces_.push_back(ns); }
  const Limits& limits() const { return limits_; }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Status Exec(const Body& body, const std::shared_ptr<Scope>& scope);
  Status ExecStmt(const Stmt& s, const std::shared_ptr<Scope>& scope);
  Status ExecStmtInner(const Stmt& s, const std::shared_ptr<Scope>& scope);
  Status ExecFor(const Stmt& s, const std::shared_ptr<Scope>& scope);
  Status Assign(const Expr& target, const Value& v, const std::shared_ptr<Scope>& scope);
  Status Emit(const std::string& text);
  Result<std::string> Capture(const Body& body, const std::shared_ptr<Scope>& scope);
  Status Step();

  Result<Value> Eval(const Expr& e, const std::shared_ptr<Scope>& scope);
  Result<Value> EvalInner(const Expr& e, const std::shared_ptr<Scope>& scope);
  Status EvalArgs(const CallArgsExpr& call, const std::shared_ptr<Scope>& scope, CallArgs* out);
  Result<Value> MakeMacro(const Stmt& s, const std::shared_ptr<Scope>& scope, bool is_caller);
  Result<Value> InvokeMacro(const Stmt& m, const std::weak_ptr<Scope>& def, CallArgs& args);
  Status PositionError(size_t pos, const Status& st) const;

  const std::string& src_;
  Limits limits_;
  std::string* out_ = nullptr;
  std::shared_ptr<Scope> globals_;
  Flow flow_ = Flow::kNormal;
  uint64_t steps_ = 0;
  uint64_t work_ = 0;
  int call_depth_ = 0;
  int nesting_ = 0;
  std::vector<std::weak_ptr<Namespace>> namespaces_;
};

// Iterating a value the way Python's iter() does (dict -> keys, str -> characters,
// undefined -> nothing); other values are a TypeError-like Status.
Result<List> Iterate(const Value& v);

}  // namespace jisu::jinja
