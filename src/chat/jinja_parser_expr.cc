// Expression parsing for chat templates, following jinja2's grammar and precedence
// (condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary < postfix/filters):
// tuples and assignment targets, literals, lists and dicts, subscripts and slices, call
// arguments, filters and `is` tests. Statements are in jinja_parser.cc; the Parser class is
// declared in jinja_parser_internal.h.
#include <algorithm>
#include <initializer_list>

#include "chat/jinja_parser_internal.h"

namespace jisu::jinja::parser_internal {

// ---- expressions

Result<ExprPtr> Parser::ParseAssignTarget(bool with_tuple, bool name_only,
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
bool Parser::Assignable(const Expr& e) {
  if (e.kind == ExprKind::kName || e.kind == ExprKind::kNSRef) return true;
  if (e.kind != ExprKind::kTuple) return false;
  for (const auto& k : e.kids) {
    if (k->kind == ExprKind::kNSRef || !Assignable(*k)) return false;
  }
  return true;
}

bool Parser::IsTupleEnd(std::initializer_list<const char*> extra_end) const {
  const Token& t = Cur();
  if (t.kind == TokKind::kVarEnd || t.kind == TokKind::kBlockEnd || IsOp(t, ")")) return true;
  for (const char* e : extra_end) {
    if (IsName(t, e)) return true;
  }
  return false;
}

Result<ExprPtr> Parser::ParseTuple(bool simplified, bool with_condexpr,
                                   std::initializer_list<const char*> extra_end,
                                   bool explicit_parentheses, bool with_namespace) {
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

Result<ExprPtr> Parser::ParseExpression(bool with_condexpr) {
  DepthGuard g(&depth_);
  JISU_RETURN_IF_ERROR(CheckDepth());
  if (with_condexpr) return ParseCondExpr();
  return ParseOr();
}

Result<ExprPtr> Parser::ParseCondExpr() {
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

Result<ExprPtr> Parser::MakeBinary(const std::string& op, size_t pos, ExprPtr l, ExprPtr r) {
  auto b = NewExpr(ExprKind::kBinary, pos);
  b->name = op;
  b->kids.push_back(std::move(l));
  b->kids.push_back(std::move(r));
  JISU_RETURN_IF_ERROR(Seal(b.get()));
  return b;
}

Result<ExprPtr> Parser::ParseOr() {
  size_t pos = Cur().pos;
  JISU_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
  while (SkipName("or")) {
    JISU_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
    JISU_ASSIGN_OR_RETURN(left, MakeBinary("or", pos, std::move(left), std::move(right)));
  }
  return left;
}

Result<ExprPtr> Parser::ParseAnd() {
  size_t pos = Cur().pos;
  JISU_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
  while (SkipName("and")) {
    JISU_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
    JISU_ASSIGN_OR_RETURN(left, MakeBinary("and", pos, std::move(left), std::move(right)));
  }
  return left;
}

Result<ExprPtr> Parser::ParseNot() {
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

Result<ExprPtr> Parser::ParseCompare() {
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

Result<ExprPtr> Parser::ParseMath1() {
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

Result<ExprPtr> Parser::ParseConcat() {
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

Result<ExprPtr> Parser::ParseMath2() {
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

Result<ExprPtr> Parser::ParsePow() {
  size_t pos = Cur().pos;
  JISU_ASSIGN_OR_RETURN(ExprPtr left, ParseUnary(true));
  while (SkipOp("**")) {
    JISU_ASSIGN_OR_RETURN(ExprPtr right, ParseUnary(true));
    JISU_ASSIGN_OR_RETURN(left, MakeBinary("**", pos, std::move(left), std::move(right)));
  }
  return left;
}

Result<ExprPtr> Parser::ParseUnary(bool with_filter) {
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

Result<ExprPtr> Parser::ParsePrimary(bool with_namespace) {
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

Result<ExprPtr> Parser::ParseList() {
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

Result<ExprPtr> Parser::ParseDict() {
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

Result<ExprPtr> Parser::ParsePostfix(ExprPtr node) {
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

Result<ExprPtr> Parser::ParseFilterExpr(ExprPtr node) {
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

Result<ExprPtr> Parser::ParseSubscript(ExprPtr node) {
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

Result<ExprPtr> Parser::ParseSubscribed() {
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

Status Parser::ParseCallArgs(CallArgsExpr* out) {
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

Result<ExprPtr> Parser::ParseCall(ExprPtr node) {
  auto e = NewExpr(ExprKind::kCall, Cur().pos);
  JISU_RETURN_IF_ERROR(ParseCallArgs(&e->call));
  e->kids.push_back(std::move(node));
  JISU_RETURN_IF_ERROR(Seal(e.get()));
  return e;
}

Result<std::string> Parser::ParseDottedName() {
  JISU_ASSIGN_OR_RETURN(std::string name, ExpectName());
  while (SkipOp(".")) {
    JISU_ASSIGN_OR_RETURN(std::string part, ExpectName());
    name += "." + part;
  }
  return name;
}

Result<ExprPtr> Parser::ParseFilter(ExprPtr node, bool start_inline) {
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

Result<ExprPtr> Parser::ParseTest(ExprPtr node) {
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

}  // namespace jisu::jinja::parser_internal
