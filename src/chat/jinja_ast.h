// Syntax tree of a parsed Jinja template. The parser owns construction; the interpreter only
// reads it. Every node keeps the byte offset of its first token for error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace jisu::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct CallArgsExpr {
  std::vector<ExprPtr> pos;
  std::vector<std::pair<std::string, ExprPtr>> kw;
  ExprPtr dyn_args;    // *args
  ExprPtr dyn_kwargs;  // **kwargs
};

enum class ExprKind {
  kConst,    // value
  kName,     // name
  kNSRef,    // name.attr as an assignment target: name, attr
  kGetattr,  // kids[0].name
  kGetitem,  // kids[0][kids[1]]
  kSlice,    // kids[0..2]: start, stop, step (each may be null); only inside kGetitem
  kList,     // kids
  kTuple,    // kids
  kDict,     // kids: key, value, key, value, ...
  kUnary,    // name ("-", "+", "not") kids[0]
  kBinary,   // name ("+", "-", "*", "/", "//", "%", "**", "and", "or") kids[0], kids[1]
  kConcat,   // kids joined with ~
  kCompare,  // kids[0] then ops[i] applied with kids[i+1]
  kCond,     // kids[0] if kids[1] else kids[2] (kids[2] may be null)
  kFilter,   // kids[0] | name(call); kids[0] is null in filter blocks / set blocks
  kTest,     // kids[0] is name(call)
  kCall,     // kids[0](call)
};

struct Expr {
  ExprKind kind;
  size_t pos = 0;
  int depth = 1;  // height of the subtree, bounded by the parser
  Value value;
  std::string name;
  std::string attr;
  std::vector<ExprPtr> kids;
  std::vector<std::string> ops;
  CallArgsExpr call;
};

enum class StmtKind {
  kData,         // text
  kOutput,       // {{ expr }}
  kIf,           // expr, body, else_body (elif is a nested kIf in else_body)
  kFor,          // target, expr (iterable), cond (filter), body, else_body, recursive
  kSet,          // target = expr
  kSetBlock,     // target, filter (may be null), body
  kMacro,        // name, params, defaults, body
  kCallBlock,    // expr (the call), params, defaults, body
  kFilterBlock,  // filter, body
  kWith,         // targets/values in params + defaults, body
  kBreak,
  kContinue,
  kScope,  // body rendered in place ({% generation %})
};

struct Stmt {
  StmtKind kind;
  size_t pos = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr target;
  ExprPtr cond;
  ExprPtr filter;
  Body body;
  Body else_body;
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // aligned to the last defaults.size() params
  bool recursive = false;
  // Macros: which of the implicit names the body refers to (jinja2 only accepts extra
  // arguments when it does).
  bool uses_varargs = false;
  bool uses_kwargs = false;
  bool uses_caller = false;
};

}  // namespace jisu::jinja
