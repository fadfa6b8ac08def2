// Template-level parsing: ParseTemplate, and the statements of a chat template ({% for %},
// {% if %}, {% set %}, {% macro %}, {% call %}, {% filter %}, {% with %}, {% print %}) down to
// where their expressions begin; those are parsed in jinja_parser_expr.cc. The Parser class
// is declared in jinja_parser_internal.h.
#include "chat/jinja_parser.h"

#include <initializer_list>

#include "chat/jinja_lexer.h"
#include "chat/jinja_parser_internal.h"

namespace jisu::jinja {
namespace parser_internal {

// ---- statements

Result<Body> Parser::Subparse(std::initializer_list<const char*> end_tokens) {
  DepthGuard g(&depth_);
  JISU_RETURN_IF_ERROR(CheckDepth());
  Body body;
  while (Cur().kind != TokKind::kEof) {
    const Token& t = Cur();
    if (t.kind == TokKind::kData) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kData;
      s->pos = t.pos;
      s->text = t.text;
      body.push_back(std::move(s));
      Advance();
    } else if (t.kind == TokKind::kVarBegin) {
      Advance();
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kOutput;
      s->pos = Cur().pos;
      JISU_ASSIGN_OR_RETURN(s->expr, ParseTuple(false, true, {}, false));
      JISU_RETURN_IF_ERROR(ExpectKind(TokKind::kVarEnd, "end of print statement"));
      body.push_back(std::move(s));
    } else if (t.kind == TokKind::kBlockBegin) {
      Advance();
      for (const char* e : end_tokens) {
        if (CurIsName(e)) return body;
      }
      JISU_ASSIGN_OR_RETURN(StmtPtr s, ParseStatement());
      if (s) body.push_back(std::move(s));
      JISU_RETURN_IF_ERROR(ExpectKind(TokKind::kBlockEnd, "end of statement block"));
    } else {
      return FailHere("unexpected " + Describe(t));
    }
  }
  if (end_tokens.size() > 0) {
    std::string names;
    for (const char* e : end_tokens) {
      if (!names.empty()) names += " or ";
      names += std::string("'") + e + "'";
    }
    return FailHere("unexpected end of template, expected " + names);
  }
  return body;
}

Result<Body> Parser::ParseStatements(std::initializer_list<const char*> end_tokens,
                                     bool drop_needle) {
  SkipOp(":");
  JISU_RETURN_IF_ERROR(ExpectKind(TokKind::kBlockEnd, "end of statement block"));
  JISU_ASSIGN_OR_RETURN(Body body, Subparse(end_tokens));
  if (drop_needle) Advance();
  return body;
}

Result<StmtPtr> Parser::ParseStatement() {
  const Token& t = Cur();
  if (t.kind != TokKind::kName) return FailHere("tag name expected");
  const std::string& n = t.text;
  if (n == "for") return ParseFor();
  if (n == "if") return ParseIf();
  if (n == "set") return ParseSet();
  if (n == "macro") return ParseMacro();
  if (n == "call") return ParseCallBlock();
  if (n == "filter") return ParseFilterBlock();
  if (n == "with") return ParseWith();
  if (n == "print") return ParsePrint();
  if (n == "generation") {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kScope;
    s->pos = t.pos;
    Advance();
    JISU_ASSIGN_OR_RETURN(s->body, ParseStatements({"endgeneration"}, true));
    return s;
  }
  if (n == "break" || n == "continue") {
    if (loop_depth_ == 0) return FailHere("'" + n + "' outside of a loop");
    auto s = std::make_unique<Stmt>();
    s->kind = n == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    s->pos = t.pos;
    Advance();
    return s;
  }
  if (n == "block" || n == "extends" || n == "include" || n == "import" || n == "from" ||
      n == "autoescape") {
    return FailHere("the '" + n + "' tag is not supported in chat templates");
  }
  return FailHere("encountered unknown tag '" + n + "'");
}

Result<StmtPtr> Parser::ParseFor() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kFor;
  s->pos = Cur().pos;
  Advance();
  JISU_ASSIGN_OR_RETURN(s->target, ParseAssignTarget(true, false, {"in"}, false));
  if (!SkipName("in")) return FailHere("expected 'in', got " + Describe(Cur()));
  JISU_ASSIGN_OR_RETURN(s->expr, ParseTuple(false, false, {"recursive"}, false));
  if (SkipName("if")) {
    JISU_ASSIGN_OR_RETURN(s->cond, ParseExpression(true));
  }
  s->recursive = SkipName("recursive");
  if (s->recursive) return Fail(s->pos, "recursive for loops are not supported");
  ++loop_depth_;
  auto body = ParseStatements({"endfor", "else"}, false);
  --loop_depth_;
  if (!body.ok()) return body.status();
  s->body = std::move(body).value();
  bool is_else = CurIsName("else");
  Advance();
  if (is_else) {
    JISU_ASSIGN_OR_RETURN(s->else_body, ParseStatements({"endfor"}, true));
  }
  return s;
}

Result<StmtPtr> Parser::ParseIf() {
  auto root = std::make_unique<Stmt>();
  root->kind = StmtKind::kIf;
  root->pos = Cur().pos;
  Advance();
  Stmt* node = root.get();
  while (true) {
    JISU_ASSIGN_OR_RETURN(node->expr, ParseTuple(false, false, {}, false));
    JISU_ASSIGN_OR_RETURN(node->body, ParseStatements({"elif", "else", "endif"}, false));
    if (CurIsName("elif")) {
      auto next = std::make_unique<Stmt>();
      next->kind = StmtKind::kIf;
      next->pos = Cur().pos;
      Advance();
      Stmt* raw = next.get();
      node->else_body.push_back(std::move(next));
      node = raw;
      continue;
    }
    if (CurIsName("else")) {
      Advance();
      JISU_ASSIGN_OR_RETURN(node->else_body, ParseStatements({"endif"}, true));
    } else {
      Advance();  // endif
    }
    break;
  }
  return root;
}

Result<StmtPtr> Parser::ParseSet() {
  auto s = std::make_unique<Stmt>();
  s->pos = Cur().pos;
  Advance();
  JISU_ASSIGN_OR_RETURN(s->target, ParseAssignTarget(true, false, {}, true));
  if (SkipOp("=")) {
    s->kind = StmtKind::kSet;
    JISU_ASSIGN_OR_RETURN(s->expr, ParseTuple(false, true, {}, false));
    return s;
  }
  s->kind = StmtKind::kSetBlock;
  JISU_ASSIGN_OR_RETURN(s->filter, ParseFilter(nullptr, false));
  JISU_ASSIGN_OR_RETURN(s->body, ParseStatements({"endset"}, true));
  return s;
}

Status Parser::ParseSignature(Stmt* s) {
  JISU_RETURN_IF_ERROR(ExpectOp("("));
  while (!CurIsOp(")")) {
    if (!s->params.empty()) JISU_RETURN_IF_ERROR(ExpectOp(","));
    if (Cur().kind != TokKind::kName) return FailHere("expected name, got " + Describe(Cur()));
    std::string name = Cur().text;
    Advance();
    if (SkipOp("=")) {
      JISU_ASSIGN_OR_RETURN(ExprPtr d, ParseExpression(true));
      s->defaults.push_back(std::move(d));
    } else if (!s->defaults.empty()) {
      return FailHere("non-default argument follows default argument");
    }
    s->params.push_back(std::move(name));
  }
  return ExpectOp(")");
}

void Parser::ScanNames(const Expr* e, Stmt* m) {
  if (e == nullptr) return;
  if (e->kind == ExprKind::kName) {
    if (e->name == "varargs") m->uses_varargs = true;
    if (e->name == "kwargs") m->uses_kwargs = true;
    if (e->name == "caller") m->uses_caller = true;
  }
  for (const auto& k : e->kids) ScanNames(k.get(), m);
  for (const auto& k : e->call.pos) ScanNames(k.get(), m);
  for (const auto& kv : e->call.kw) ScanNames(kv.second.get(), m);
  ScanNames(e->call.dyn_args.get(), m);
  ScanNames(e->call.dyn_kwargs.get(), m);
}
void Parser::ScanBody(const Body& body, Stmt* m) {
  for (const auto& s : body) {
    ScanNames(s->expr.get(), m);
    ScanNames(s->target.get(), m);
    ScanNames(s->cond.get(), m);
    ScanNames(s->filter.get(), m);
    for (const auto& d : s->defaults) ScanNames(d.get(), m);
    ScanBody(s->body, m);
    ScanBody(s->else_body, m);
  }
}

Result<StmtPtr> Parser::ParseMacro() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kMacro;
  s->pos = Cur().pos;
  Advance();
  JISU_ASSIGN_OR_RETURN(s->name, ExpectName());
  JISU_RETURN_IF_ERROR(ParseSignature(s.get()));
  int saved = loop_depth_;
  loop_depth_ = 0;
  auto body = ParseStatements({"endmacro"}, true);
  loop_depth_ = saved;
  if (!body.ok()) return body.status();
  s->body = std::move(body).value();
  ScanBody(s->body, s.get());
  return s;
}

Result<StmtPtr> Parser::ParseCallBlock() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kCallBlock;
  s->pos = Cur().pos;
  Advance();
  if (CurIsOp("(")) JISU_RETURN_IF_ERROR(ParseSignature(s.get()));
  JISU_ASSIGN_OR_RETURN(s->expr, ParseExpression(true));
  if (s->expr->kind != ExprKind::kCall) return Fail(s->pos, "expected call");
  int saved = loop_depth_;
  loop_depth_ = 0;
  auto body = ParseStatements({"endcall"}, true);
  loop_depth_ = saved;
  if (!body.ok()) return body.status();
  s->body = std::move(body).value();
  ScanBody(s->body, s.get());
  return s;
}

Result<StmtPtr> Parser::ParseFilterBlock() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kFilterBlock;
  s->pos = Cur().pos;
  Advance();
  JISU_ASSIGN_OR_RETURN(s->filter, ParseFilter(nullptr, true));
  JISU_ASSIGN_OR_RETURN(s->body, ParseStatements({"endfilter"}, true));
  return s;
}

Result<StmtPtr> Parser::ParseWith() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kWith;
  s->pos = Cur().pos;
  Advance();
  while (Cur().kind != TokKind::kBlockEnd) {
    if (!s->params.empty()) JISU_RETURN_IF_ERROR(ExpectOp(","));
    JISU_ASSIGN_OR_RETURN(std::string name, ExpectName());
    JISU_RETURN_IF_ERROR(ExpectOp("="));
    JISU_ASSIGN_OR_RETURN(ExprPtr v, ParseExpression(true));
    s->params.push_back(std::move(name));
    s->defaults.push_back(std::move(v));
  }
  JISU_ASSIGN_OR_RETURN(s->body, ParseStatements({"endwith"}, true));
  return s;
}

Result<StmtPtr> Parser::ParsePrint() {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kOutput;
  s->pos = Cur().pos;
  Advance();
  auto tuple = NewExpr(ExprKind::kTuple, s->pos);
  while (Cur().kind != TokKind::kBlockEnd) {
    if (!tuple->kids.empty()) JISU_RETURN_IF_ERROR(ExpectOp(","));
    JISU_ASSIGN_OR_RETURN(ExprPtr e, ParseExpression(true));
    tuple->kids.push_back(std::move(e));
  }
  // {% print a, b %} writes each expression; model it as a concatenation.
  tuple->kind = ExprKind::kConcat;
  JISU_RETURN_IF_ERROR(Seal(tuple.get()));
  s->expr = std::move(tuple);
  return s;
}

}  // namespace parser_internal

Result<Body> ParseTemplate(const std::string& source) {
  JISU_ASSIGN_OR_RETURN(std::vector<Token> toks, Tokenize(source));
  parser_internal::Parser p(source, std::move(toks));
  return p.ParseAll();
}

}  // namespace jisu::jinja
