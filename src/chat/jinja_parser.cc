#include "chat/jinja_parser.h"

#include <algorithm>
#include <initializer_list>

#include "chat/jinja_lexer.h"

namespace jisu::jinja {
namespace {

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

  Result<Body> Subparse(std::initializer_list<const char*> end_tokens) {
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

  Result<Body> ParseStatements(std::initializer_list<const char*> end_tokens, bool drop_needle) {
    SkipOp(":");
    JISU_RETURN_IF_ERROR(ExpectKind(TokKind::kBlockEnd, "end of statement block"));
    JISU_ASSIGN_OR_RETURN(Body body, Subparse(end_tokens));
    if (drop_needle) Advance();
    return body;
  }

  Result<StmtPtr> ParseStatement() {
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

  Result<StmtPtr> ParseFor() {
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

  Result<StmtPtr> ParseIf() {
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

  Result<StmtPtr> ParseSet() {
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

  Status ParseSignature(Stmt* s) {
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

  static void ScanNames(const Expr* e, Stmt* m) {
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
  static void ScanBody(const Body& body, Stmt* m) {
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

  Result<StmtPtr> ParseMacro() {
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

  Result<StmtPtr> ParseCallBlock() {
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

  Result<StmtPtr> ParseFilterBlock() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kFilterBlock;
    s->pos = Cur().pos;
    Advance();
    JISU_ASSIGN_OR_RETURN(s->filter, ParseFilter(nullptr, true));
    JISU_ASSIGN_OR_RETURN(s->body, ParseStatements({"endfilter"}, true));
    return s;
  }

  Result<StmtPtr> ParseWith() {
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

  Result<StmtPtr> ParsePrint() {
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

  // ---- expressions

  Result<ExprPtr> ParseAssignTarget(bool with_tuple, bool name_only,
                                    std::initializer_list<const char*> extra_end,
                                    bool with_namespace) {
    size_t pos = Cur().pos;
    ExprPtr target;
    if (name_only) {
      JISU_ASSIGN_OR_RETURN(std::string n, ExpectName());
      target = NewExpr(ExprKind::kName, pos);
      target->name = std::move(n);
    } else if (with_tuple) {
      JISU_ASSIGN_OR_RETURN(target, ParseTuple(true, true, extra_end, false, with_namespace));
    } else {
      JISU_ASSIGN_OR_RETURN(target, ParsePrimary(with_namespace));
    }
    if (!Assignable(*target)) return Fail(pos, "can't assign to this expression");
    return target;
  }

  // Names, namespace attributes, and (nested) tuples of names, as jinja2's can_assign.
  static bool Assignable(const Expr& e) {
    if (e.kind == ExprKind::kName || e.kind == ExprKind::kNSRef) return true;
    if (e.kind != ExprKind::kTuple) return false;
    for (const auto& k : e.kids) {
      if (k->kind == ExprKind::kNSRef || !Assignable(*k)) return false;
    }
    return true;
  }

  bool IsTupleEnd(std::initializer_list<const char*> extra_end) const {
    const Token& t = Cur();
    if (t.kind == TokKind::kVarEnd || t.kind == TokKind::kBlockEnd || IsOp(t, ")")) return true;
    for (const char* e : extra_end) {
      if (IsName(t, e)) return true;
    }
    return false;
  }

  Result<ExprPtr> ParseTuple(bool simplified, bool with_condexpr,
                             std::initializer_list<const char*> extra_end,
                             bool explicit_parentheses, bool with_namespace = false) {
    size_t pos = Cur().pos;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) JISU_RETURN_IF_ERROR(ExpectOp(","));
      if (IsTupleEnd(extra_end)) break;
      if (simplified) {
        JISU_ASSIGN_OR_RETURN(ExprPtr e, ParsePrimary(with_namespace));
        args.push_back(std::move(e));
      } else {
        JISU_ASSIGN_OR_RETURN(ExprPtr e, ParseExpression(with_condexpr));
        args.push_back(std::move(e));
      }
      if (CurIsOp(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parentheses) return FailHere("expected an expression, got " + Describe(Cur()));
    }
    auto t = NewExpr(ExprKind::kTuple, pos);
    t->kids = std::move(args);
    JISU_RETURN_IF_ERROR(Seal(t.get()));
    return t;
  }

  Result<ExprPtr> ParseExpression(bool with_condexpr) {
    DepthGuard g(&depth_);
    JISU_RETURN_IF_ERROR(CheckDepth());
    if (with_condexpr) return ParseCondExpr();
    return ParseOr();
  }

  Result<ExprPtr> ParseCondExpr() {
    size_t pos = Cur().pos;
    JISU_ASSIGN_OR_RETURN(ExprPtr expr1, ParseOr());
    while (SkipName("if")) {
      JISU_ASSIGN_OR_RETURN(ExprPtr expr2, ParseOr());
      ExprPtr expr3;
      if (SkipName("else")) {
        DepthGuard g(&depth_);
        JISU_RETURN_IF_ERROR(CheckDepth());
        JISU_ASSIGN_OR_RETURN(expr3, ParseCondExpr());
      }
      auto c = NewExpr(ExprKind::kCond, pos);
      c->kids.push_back(std::move(expr1));
      c->kids.push_back(std::move(expr2));
      c->kids.push_back(std::move(expr3));
      JISU_RETURN_IF_ERROR(Seal(c.get()));
      expr1 = std::move(c);
      pos = Cur().pos;
    }
    return expr1;
  }

  Result<ExprPtr> MakeBinary(const std::string& op, size_t pos, ExprPtr l, ExprPtr r) {
    auto b = NewExpr(ExprKind::kBinary, pos);
    b->name = op;
    b->kids.push_back(std::move(l));
    b->kids.push_back(std::move(r));
    JISU_RETURN_IF_ERROR(Seal(b.get()));
    return b;
  }

  Result<ExprPtr> ParseOr() {
    size_t pos = Cur().pos;
    JISU_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
    while (SkipName("or")) {
      JISU_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
      JISU_ASSIGN_OR_RETURN(left, MakeBinary("or", pos, std::move(left), std::move(right)));
    }
    return left;
  }

  Result<ExprPtr> ParseAnd() {
    size_t pos = Cur().pos;
    JISU_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
    while (SkipName("and")) {
      JISU_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
      JISU_ASSIGN_OR_RETURN(left, MakeBinary("and", pos, std::move(left), std::move(right)));
    }
    return left;
  }

  Result<ExprPtr> ParseNot() {
    if (CurIsName("not")) {
      size_t pos = Cur().pos;
      Advance();
      DepthGuard g(&depth_);
      JISU_RETURN_IF_ERROR(CheckDepth());
      JISU_ASSIGN_OR_RETURN(ExprPtr inner, ParseNot());
      auto n = NewExpr(ExprKind::kUnary, pos);
      n->name = "not";
      n->kids.push_back(std::move(inner));
      JISU_RETURN_IF_ERROR(Seal(n.get()));
      return n;
    }
    return ParseCompare();
  }

  Result<ExprPtr> ParseCompare() {
    size_t pos = Cur().pos;
    JISU_ASSIGN_OR_RETURN(ExprPtr expr, ParseMath1());
    ExprPtr cmp;
    while (true) {
      std::string op;
      const Token& t = Cur();
      if (t.kind == TokKind::kOp && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                     t.text == "<=" || t.text == ">" || t.text == ">=")) {
        op = t.text;
        Advance();
      } else if (IsName(t, "in")) {
        op = "in";
        Advance();
      } else if (IsName(t, "not") && IsName(Look(), "in")) {
        op = "notin";
        Advance();
        Advance();
      } else {
        break;
      }
      if (!cmp) {
        cmp = NewExpr(ExprKind::kCompare, pos);
        cmp->kids.push_back(std::move(expr));
      }
      JISU_ASSIGN_OR_RETURN(ExprPtr rhs, ParseMath1());
      cmp->ops.push_back(op);
      cmp->kids.push_back(std::move(rhs));
    }
    if (!cmp) return expr;
    JISU_RETURN_IF_ERROR(Seal(cmp.get()));
    return cmp;
  }

  Result<ExprPtr> ParseMath1() {
    size_t pos = Cur().pos;
    JISU_ASSIGN_OR_RETURN(ExprPtr left, ParseConcat());
    while (CurIsOp("+") || CurIsOp("-")) {
      std::string op = Cur().text;
      Advance();
      JISU_ASSIGN_OR_RETURN(ExprPtr right, ParseConcat());
      JISU_ASSIGN_OR_RETURN(left, MakeBinary(op, pos, std::move(left), std::move(right)));
    }
    return left;
  }

  Result<ExprPtr> ParseConcat() {
    size_t pos = Cur().pos;
    JISU_ASSIGN_OR_RETURN(ExprPtr first, ParseMath2());
    if (!CurIsOp("~")) return first;
    auto c = NewExpr(ExprKind::kConcat, pos);
    c->kids.push_back(std::move(first));
    while (SkipOp("~")) {
      JISU_ASSIGN_OR_RETURN(ExprPtr e, ParseMath2());
      c->kids.push_back(std::move(e));
    }
    JISU_RETURN_IF_ERROR(Seal(c.get()));
    return c;
  }

  Result<ExprPtr> ParseMath2() {
    size_t pos = Cur().pos;
    JISU_ASSIGN_OR_RETURN(ExprPtr left, ParsePow());
    while (CurIsOp("*") || CurIsOp("/") || CurIsOp("//") || CurIsOp("%")) {
      std::string op = Cur().text;
      Advance();
      JISU_ASSIGN_OR_RETURN(ExprPtr right, ParsePow());
      JISU_ASSIGN_OR_RETURN(left, MakeBinary(op, pos, std::move(left), std::move(right)));
    }
    return left;
  }

  Result<ExprPtr> ParsePow() {
    size_t pos = Cur().pos;
    JISU_ASSIGN_OR_RETURN(ExprPtr left, ParseUnary(true));
    while (SkipOp("**")) {
      JISU_ASSIGN_OR_RETURN(ExprPtr right, ParseUnary(true));
      JISU_ASSIGN_OR_RETURN(left, MakeBinary("**", pos, std::move(left), std::move(right)));
    }
    return left;
  }

  Result<ExprPtr> ParseUnary(bool with_filter) {
    DepthGuard g(&depth_);
    JISU_RETURN_IF_ERROR(CheckDepth());
    size_t pos = Cur().pos;
    ExprPtr node;
    if (CurIsOp("-") || CurIsOp("+")) {
      std::string op = Cur().text;
      Advance();
      JISU_ASSIGN_OR_RETURN(ExprPtr inner, ParseUnary(false));
      node = NewExpr(ExprKind::kUnary, pos);
      node->name = op;
      node->kids.push_back(std::move(inner));
      JISU_RETURN_IF_ERROR(Seal(node.get()));
    } else {
      JISU_ASSIGN_OR_RETURN(node, ParsePrimary(false));
    }
    JISU_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
    if (with_filter) {
      JISU_ASSIGN_OR_RETURN(node, ParseFilterExpr(std::move(node)));
    }
    return node;
  }

  Result<ExprPtr> ParsePrimary(bool with_namespace) {
    const Token& t = Cur();
    size_t pos = t.pos;
    switch (t.kind) {
      case TokKind::kName: {
        std::string n = t.text;
        Advance();
        auto e = NewExpr(ExprKind::kConst, pos);
        if (n == "true" || n == "True" || n == "false" || n == "False") {
          e->value = Value::Bool(n == "true" || n == "True");
        } else if (n == "none" || n == "None") {
          e->value = Value::None();
        } else if (with_namespace && CurIsOp(".")) {
          Advance();
          JISU_ASSIGN_OR_RETURN(std::string attr, ExpectName());
          e->kind = ExprKind::kNSRef;
          e->name = std::move(n);
          e->attr = std::move(attr);
        } else {
          e->kind = ExprKind::kName;
          e->name = std::move(n);
        }
        JISU_RETURN_IF_ERROR(Seal(e.get()));
        return e;
      }
      case TokKind::kString: {
        std::string s;
        while (Cur().kind == TokKind::kString) {
          s += Cur().text;
          Advance();
        }
        auto e = NewExpr(ExprKind::kConst, pos);
        e->value = Value::String(std::move(s));
        JISU_RETURN_IF_ERROR(Seal(e.get()));
        return e;
      }
      case TokKind::kInt:
      case TokKind::kFloat: {
        auto e = NewExpr(ExprKind::kConst, pos);
        e->value = t.kind == TokKind::kInt ? Value::Int(t.ival) : Value::Float(t.fval);
        Advance();
        JISU_RETURN_IF_ERROR(Seal(e.get()));
        return e;
      }
      case TokKind::kOp:
        if (t.text == "(") {
          Advance();
          JISU_ASSIGN_OR_RETURN(ExprPtr e, ParseTuple(false, true, {}, true));
          JISU_RETURN_IF_ERROR(ExpectOp(")"));
          return e;
        }
        if (t.text == "[") return ParseList();
        if (t.text == "{") return ParseDict();
        break;
      default:
        break;
    }
    return FailHere("unexpected " + Describe(t));
  }

  Result<ExprPtr> ParseList() {
    auto e = NewExpr(ExprKind::kList, Cur().pos);
    Advance();
    while (!CurIsOp("]")) {
      if (!e->kids.empty()) JISU_RETURN_IF_ERROR(ExpectOp(","));
      if (CurIsOp("]")) break;
      JISU_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(true));
      e->kids.push_back(std::move(item));
    }
    JISU_RETURN_IF_ERROR(ExpectOp("]"));
    JISU_RETURN_IF_ERROR(Seal(e.get()));
    return e;
  }

  Result<ExprPtr> ParseDict() {
    auto e = NewExpr(ExprKind::kDict, Cur().pos);
    Advance();
    while (!CurIsOp("}")) {
      if (!e->kids.empty()) JISU_RETURN_IF_ERROR(ExpectOp(","));
      if (CurIsOp("}")) break;
      JISU_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression(true));
      JISU_RETURN_IF_ERROR(ExpectOp(":"));
      JISU_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
      e->kids.push_back(std::move(key));
      e->kids.push_back(std::move(value));
    }
    JISU_RETURN_IF_ERROR(ExpectOp("}"));
    JISU_RETURN_IF_ERROR(Seal(e.get()));
    return e;
  }

  Result<ExprPtr> ParsePostfix(ExprPtr node) {
    while (true) {
      if (CurIsOp(".") || CurIsOp("[")) {
        JISU_ASSIGN_OR_RETURN(node, ParseSubscript(std::move(node)));
      } else if (CurIsOp("(")) {
        JISU_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
      } else {
        break;
      }
    }
    return node;
  }

  Result<ExprPtr> ParseFilterExpr(ExprPtr node) {
    while (true) {
      if (CurIsOp("|")) {
        JISU_ASSIGN_OR_RETURN(node, ParseFilter(std::move(node), false));
      } else if (CurIsName("is")) {
        JISU_ASSIGN_OR_RETURN(node, ParseTest(std::move(node)));
      } else if (CurIsOp("(")) {
        JISU_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
      } else {
        break;
      }
    }
    return node;
  }

  Result<ExprPtr> ParseSubscript(ExprPtr node) {
    size_t pos = Cur().pos;
    if (SkipOp(".")) {
      const Token& a = Cur();
      if (a.kind == TokKind::kName) {
        auto e = NewExpr(ExprKind::kGetattr, pos);
        e->name = a.text;
        e->kids.push_back(std::move(node));
        Advance();
        JISU_RETURN_IF_ERROR(Seal(e.get()));
        return e;
      }
      if (a.kind != TokKind::kInt) return FailHere("expected name or number");
      auto idx = NewExpr(ExprKind::kConst, a.pos);
      idx->value = Value::Int(a.ival);
      Advance();
      JISU_RETURN_IF_ERROR(Seal(idx.get()));
      auto e = NewExpr(ExprKind::kGetitem, pos);
      e->kids.push_back(std::move(node));
      e->kids.push_back(std::move(idx));
      JISU_RETURN_IF_ERROR(Seal(e.get()));
      return e;
    }
    JISU_RETURN_IF_ERROR(ExpectOp("["));
    std::vector<ExprPtr> args;
    while (!CurIsOp("]")) {
      if (!args.empty()) JISU_RETURN_IF_ERROR(ExpectOp(","));
      JISU_ASSIGN_OR_RETURN(ExprPtr a, ParseSubscribed());
      args.push_back(std::move(a));
    }
    JISU_RETURN_IF_ERROR(ExpectOp("]"));
    ExprPtr arg;
    if (args.size() == 1) {
      arg = std::move(args[0]);
    } else {
      arg = NewExpr(ExprKind::kTuple, pos);
      arg->kids = std::move(args);
      JISU_RETURN_IF_ERROR(Seal(arg.get()));
    }
    auto e = NewExpr(ExprKind::kGetitem, pos);
    e->kids.push_back(std::move(node));
    e->kids.push_back(std::move(arg));
    JISU_RETURN_IF_ERROR(Seal(e.get()));
    return e;
  }

  Result<ExprPtr> ParseSubscribed() {
    size_t pos = Cur().pos;
    std::vector<ExprPtr> args;
    if (SkipOp(":")) {
      args.push_back(nullptr);
    } else {
      JISU_ASSIGN_OR_RETURN(ExprPtr node, ParseExpression(true));
      if (!CurIsOp(":")) return node;
      Advance();
      args.push_back(std::move(node));
    }
    if (CurIsOp(":")) {
      args.push_back(nullptr);
    } else if (!CurIsOp("]") && !CurIsOp(",")) {
      JISU_ASSIGN_OR_RETURN(ExprPtr stop, ParseExpression(true));
      args.push_back(std::move(stop));
    } else {
      args.push_back(nullptr);
    }
    if (SkipOp(":")) {
      if (!CurIsOp("]") && !CurIsOp(",")) {
        JISU_ASSIGN_OR_RETURN(ExprPtr step, ParseExpression(true));
        args.push_back(std::move(step));
      } else {
        args.push_back(nullptr);
      }
    } else {
      args.push_back(nullptr);
    }
    auto e = NewExpr(ExprKind::kSlice, pos);
    e->kids = std::move(args);
    JISU_RETURN_IF_ERROR(Seal(e.get()));
    return e;
  }

  Status ParseCallArgs(CallArgsExpr* out) {
    size_t pos = Cur().pos;
    JISU_RETURN_IF_ERROR(ExpectOp("("));
    bool require_comma = false;
    auto ensure = [&](bool ok) -> Status {
      if (!ok) return Fail(pos, "invalid syntax for function call expression");
      return Status::Ok();
    };
    while (!CurIsOp(")")) {
      if (require_comma) {
        JISU_RETURN_IF_ERROR(ExpectOp(","));
        if (CurIsOp(")")) break;
      }
      if (CurIsOp("*")) {
        JISU_RETURN_IF_ERROR(ensure(!out->dyn_args && !out->dyn_kwargs));
        Advance();
        JISU_ASSIGN_OR_RETURN(out->dyn_args, ParseExpression(true));
      } else if (CurIsOp("**")) {
        JISU_RETURN_IF_ERROR(ensure(!out->dyn_kwargs));
        Advance();
        JISU_ASSIGN_OR_RETURN(out->dyn_kwargs, ParseExpression(true));
      } else if (Cur().kind == TokKind::kName && IsOp(Look(), "=")) {
        JISU_RETURN_IF_ERROR(ensure(!out->dyn_kwargs));
        std::string key = Cur().text;
        Advance();
        Advance();
        JISU_ASSIGN_OR_RETURN(ExprPtr v, ParseExpression(true));
        out->kw.emplace_back(std::move(key), std::move(v));
      } else {
        JISU_RETURN_IF_ERROR(ensure(!out->dyn_args && !out->dyn_kwargs && out->kw.empty()));
        JISU_ASSIGN_OR_RETURN(ExprPtr v, ParseExpression(true));
        out->pos.push_back(std::move(v));
      }
      require_comma = true;
    }
    return ExpectOp(")");
  }

  Result<ExprPtr> ParseCall(ExprPtr node) {
    auto e = NewExpr(ExprKind::kCall, Cur().pos);
    JISU_RETURN_IF_ERROR(ParseCallArgs(&e->call));
    e->kids.push_back(std::move(node));
    JISU_RETURN_IF_ERROR(Seal(e.get()));
    return e;
  }

  Result<std::string> ParseDottedName() {
    JISU_ASSIGN_OR_RETURN(std::string name, ExpectName());
    while (SkipOp(".")) {
      JISU_ASSIGN_OR_RETURN(std::string part, ExpectName());
      name += "." + part;
    }
    return name;
  }

  Result<ExprPtr> ParseFilter(ExprPtr node, bool start_inline) {
    while (CurIsOp("|") || start_inline) {
      if (!start_inline) Advance();
      auto e = NewExpr(ExprKind::kFilter, Cur().pos);
      JISU_ASSIGN_OR_RETURN(e->name, ParseDottedName());
      if (CurIsOp("(")) JISU_RETURN_IF_ERROR(ParseCallArgs(&e->call));
      e->kids.push_back(std::move(node));
      JISU_RETURN_IF_ERROR(Seal(e.get()));
      node = std::move(e);
      start_inline = false;
    }
    return node;
  }

  Result<ExprPtr> ParseTest(ExprPtr node) {
    size_t pos = Cur().pos;
    Advance();  // is
    bool negated = SkipName("not");
    auto e = NewExpr(ExprKind::kTest, pos);
    JISU_ASSIGN_OR_RETURN(e->name, ParseDottedName());
    const Token& t = Cur();
    if (IsOp(t, "(")) {
      JISU_RETURN_IF_ERROR(ParseCallArgs(&e->call));
    } else if ((t.kind == TokKind::kName || t.kind == TokKind::kString || t.kind == TokKind::kInt ||
                t.kind == TokKind::kFloat || IsOp(t, "(") || IsOp(t, "[") || IsOp(t, "{")) &&
               !IsName(t, "else") && !IsName(t, "or") && !IsName(t, "and")) {
      if (IsName(t, "is")) return FailHere("You cannot chain multiple tests with is");
      JISU_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary(false));
      JISU_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
      e->call.pos.push_back(std::move(arg));
    }
    e->kids.push_back(std::move(node));
    JISU_RETURN_IF_ERROR(Seal(e.get()));
    if (!negated) return e;
    auto n = NewExpr(ExprKind::kUnary, pos);
    n->name = "not";
    n->kids.push_back(std::move(e));
    JISU_RETURN_IF_ERROR(Seal(n.get()));
    return n;
  }

  const std::string& src_;
  std::vector<Token> toks_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Result<Body> ParseTemplate(const std::string& source) {
  JISU_ASSIGN_OR_RETURN(std::vector<Token> toks, Tokenize(source));
  Parser p(source, std::move(toks));
  return p.ParseAll();
}

}  // namespace jisu::jinja
