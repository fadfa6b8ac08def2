// The Parser class behind ParseTemplate (jinja_parser.h), shared by the two files that define
// its methods: jinja_parser.cc (statements: for, if, set, macro, call, filter, with, print)
// and jinja_parser_expr.cc (expressions, by jinja2's precedence: conditional, or/and/not,
// comparisons, arithmetic, unary, primaries, subscripts, calls, filters and tests). The token
// cursor, error reporting and depth bounds are inline here. Nothing outside those files uses it.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"
#include "chat/jinja_parser.h"
#include "jisu/status.h"

namespace jisu::jinja::parser_internal {

constexpr int kMaxExprDepth = 200;

class Parser {
 public:
  Parser(const std::string& src, std::vector<Token> toks) : src_(src), toks_(std::move(toks)) {}

  Result<Body> ParseAll() { return Subparse({}); }

 private:
  // ---- token helpers
  const Token& Cur() const { return toks_[i_]; }
  const Token& Look() const { return toks_[std::min(i_ + 1, toks_.size() - 1)]; }
  void Advance() {
    if (i_ + 1 < toks_.size()) ++i_;
  }
  static bool IsName(const Token& t, const char* name) {
    return t.kind == TokKind::kName && t.text == name;
  }
  static bool IsOp(const Token& t, const char* op) {
    return t.kind == TokKind::kOp && t.text == op;
  }
  bool CurIsName(const char* n) const { return IsName(Cur(), n); }
  bool CurIsOp(const char* op) const { return IsOp(Cur(), op); }
  bool SkipOp(const char* op) {
    if (!CurIsOp(op)) return false;
    Advance();
    return true;
  }
  bool SkipName(const char* n) {
    if (!CurIsName(n)) return false;
    Advance();
    return true;
  }

  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case TokKind::kName:
      case TokKind::kOp:
        return "'" + t.text + "'";
      case TokKind::kString:
        return "string";
      case TokKind::kInt:
        return "integer";
      case TokKind::kFloat:
        return "float";
      case TokKind::kData:
        return "template data";
      case TokKind::kVarBegin:
        return "begin of print statement";
      case TokKind::kVarEnd:
        return "end of print statement";
      case TokKind::kBlockBegin:
        return "begin of statement block";
      case TokKind::kBlockEnd:
        return "end of statement block";
      case TokKind::kEof:
        return "end of template";
    }
    return "token";
  }

  Status Fail(size_t pos, const std::string& msg) const { return SyntaxErrorAt(src_, pos, msg); }
  Status FailHere(const std::string& msg) const { return Fail(Cur().pos, msg); }

  Status ExpectOp(const char* op) {
    if (!CurIsOp(op)) {
      return FailHere(std::string("expected '") + op + "', got " + Describe(Cur()));
    }
    Advance();
    return Status::Ok();
  }
  Status ExpectKind(TokKind k, const char* what) {
    if (Cur().kind != k)
      return FailHere(std::string("expected ") + what + ", got " + Describe(Cur()));
    Advance();
    return Status::Ok();
  }
  Result<std::string> ExpectName() {
    if (Cur().kind != TokKind::kName) return FailHere("expected name, got " + Describe(Cur()));
    std::string n = Cur().text;
    Advance();
    return n;
  }

  struct DepthGuard {
    explicit DepthGuard(int* d) : d_(d) { ++*d_; }
    ~DepthGuard() { --*d_; }
    int* d_;
  };
  Status CheckDepth() const {
    if (depth_ > kMaxParseDepth) return FailHere("template nested too deeply");
    return Status::Ok();
  }

  ExprPtr NewExpr(ExprKind k, size_t pos) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->pos = pos;
    return e;
  }

  // Left-associative chains build deep trees without recursing in the parser; bound the
  // tree depth so evaluating and destroying it cannot exhaust the stack.
  Status Seal(Expr* e) {
    int d = 0;
    auto see = [&](const ExprPtr& k) {
      if (k) d = std::max(d, k->depth);
    };
    for (const auto& k : e->kids) see(k);
    for (const auto& k : e->call.pos) see(k);
    for (const auto& kv : e->call.kw) see(kv.second);
    see(e->call.dyn_args);
    see(e->call.dyn_kwargs);
    e->depth = d + 1;
    if (d + 1 > kMaxExprDepth) return Fail(e->pos, "expression nested too deeply");
    return Status::Ok();
  }

  // ---- statements
  Result<Body> Subparse(std::initializer_list<const char*> end_tokens);
  Result<Body> ParseStatements(std::initializer_list<const char*> end_tokens, bool drop_needle);
  Result<StmtPtr> ParseStatement();
  Result<StmtPtr> ParseFor();
  Result<StmtPtr> ParseIf();
  Result<StmtPtr> ParseSet();
  Status ParseSignature(Stmt* s);
  static void ScanNames(const Expr* e, Stmt* m);
  static void ScanBody(const Body& body, Stmt* m);
  Result<StmtPtr> ParseMacro();
  Result<StmtPtr> ParseCallBlock();
  Result<StmtPtr> ParseFilterBlock();
  Result<StmtPtr> ParseWith();
  Result<StmtPtr> ParsePrint();

  // ---- expressions
  Result<ExprPtr> ParseAssignTarget(bool with_tuple, bool name_only,
                                    std::initializer_list<const char*> extra_end,
                                    bool with_namespace);
  static bool Assignable(const Expr& e);
  bool IsTupleEnd(std::initializer_list<const char*> extra_end) const;
  Result<ExprPtr> ParseTuple(bool simplified, bool with_condexpr,
                             std::initializer_list<const char*> extra_end,
                             bool explicit_parentheses, bool with_namespace = false);
  Result<ExprPtr> ParseExpression(bool with_condexpr);
  Result<ExprPtr> ParseCondExpr();
  Result<ExprPtr> MakeBinary(const std::string& op, size_t pos, ExprPtr l, ExprPtr r);
  Result<ExprPtr> ParseOr();
  Result<ExprPtr> ParseAnd();
  Result<ExprPtr> ParseNot();
  Result<ExprPtr> ParseCompare();
  Result<ExprPtr> ParseMath1();
  Result<ExprPtr> ParseConcat();
  Result<ExprPtr> ParseMath2();
  Result<ExprPtr> ParsePow();
  Result<ExprPtr> ParseUnary(bool with_filter);
  Result<ExprPtr> ParsePrimary(bool with_namespace);
  Result<ExprPtr> ParseList();
  Result<ExprPtr> ParseDict();
  Result<ExprPtr> ParsePostfix(ExprPtr node);
  Result<ExprPtr> ParseFilterExpr(ExprPtr node);
  Result<ExprPtr> ParseSubscript(ExprPtr node);
  Result<ExprPtr> ParseSubscribed();
  Status ParseCallArgs(CallArgsExpr* out);
  Result<ExprPtr> ParseCall(ExprPtr node);
  Result<std::string> ParseDottedName();
  Result<ExprPtr> ParseFilter(ExprPtr node, bool start_inline);
  Result<ExprPtr> ParseTest(ExprPtr node);

  const std::string& src_;
  std::vector<Token> toks_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace jisu::jinja::parser_internal
