#include "chat/jinja_interp.h"

#include <algorithm>

#include "chat/jinja_builtins.h"
#include "chat/jinja_lexer.h"

namespace jisu::jinja {

const Value* Scope::Lookup(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_.get()) {
    for (const auto& [k, v] : s->vars_) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Scope::Set(const std::string& name, Value v) {
  for (auto& [k, old] : vars_) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars_.emplace_back(name, std::move(v));
}

Interp::~Interp() {
  // Break reference cycles through namespaces (`{% set ns.self = ns %}`).
  for (auto& w : namespaces_) {
    if (auto ns = w.lock()) {
      Dict tmp;
      std::swap(tmp, ns->attrs);
    }
  }
}

Result<List> Iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return List{};
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      return v.list();
    case Value::Kind::kIterator:
      return v.iter().Take();
    case Value::Kind::kDict: {
      List keys;
      keys.reserve(v.dict().items.size());
      for (const auto& kv : v.dict().items) keys.push_back(kv.first);
      return keys;
    }
    case Value::Kind::kString: {
      List chars;
      const std::string& s = v.s();
      for (size_t p = 0; p < s.size();) {
        size_t b = p;
        DecodeUtf8(s, &p);
        chars.push_back(Value::String(s.substr(b, p - b)));
      }
      return chars;
    }
    default:
      return Status::InvalidArgument("'" + TypeName(v) + "' object is not iterable");
  }
}

Status Interp::Step() {
  if (++steps_ > limits_.max_steps) {
    return Status::ResourceExhausted("chat template exceeded the step limit (" +
                                     std::to_string(limits_.max_steps) + ")");
  }
  return Status::Ok();
}

Status Interp::Charge(size_t bytes) {
  work_ += bytes;
  if (work_ > limits_.max_work_bytes) {
    return Status::ResourceExhausted("chat template exceeded the work limit");
  }
  return Status::Ok();
}

Status Interp::CheckString(size_t bytes) const {
  if (bytes > limits_.max_value_bytes) {
    return Status::ResourceExhausted("chat template produced a string over the size limit (" +
                                     std::to_string(limits_.max_value_bytes) + " bytes)");
  }
  return Status::Ok();
}

Status Interp::CheckList(size_t items) const {
  if (items > limits_.max_list_items) {
    return Status::ResourceExhausted("chat template produced a list over the size limit");
  }
  return Status::Ok();
}

Status Interp::PositionError(size_t pos, const Status& st) const {
  if (st.ok() || st.code() == Status::Code::kResourceExhausted ||
      st.message().rfind(kErrorPrefix, 0) == 0) {
    return st;
  }
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < pos && i < src_.size(); ++i) {
    if (src_[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return Status(st.code(), std::string(kErrorPrefix) + std::to_string(line) + ", column " +
                               std::to_string(pos - line_start + 1) + ": " + st.message());
}

Result<std::string> Interp::Render(const Body& body, std::shared_ptr<Scope> globals) {
  globals_ = globals;
  std::string out;
  out_ = &out;
  Status st = Exec(body, globals);
  out_ = nullptr;
  if (!st.ok()) return st;
  return out;
}

Status Interp::Emit(const std::string& text) {
  JISU_RETURN_IF_ERROR(CheckString(out_->size() + text.size()));
  JISU_RETURN_IF_ERROR(Charge(text.size()));
  out_->append(text);
  return Status::Ok();
}

Result<std::string> Interp::Capture(const Body& body, const std::shared_ptr<Scope>& scope) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  Status st = Exec(body, scope);
  out_ = saved;
  if (!st.ok()) return st;
  return buf;
}

Status Interp::Exec(const Body& body, const std::shared_ptr<Scope>& scope) {
  for (const auto& s : body) {
    JISU_RETURN_IF_ERROR(ExecStmt(*s, scope));
    if (flow_ != Flow::kNormal) return Status::Ok();
  }
  return Status::Ok();
}

Status Interp::Assign(const Expr& target, const Value& v, const std::shared_ptr<Scope>& scope) {
  switch (target.kind) {
    case ExprKind::kName:
      scope->Set(target.name, v);
      return Status::Ok();
    case ExprKind::kNSRef: {
      const Value* ns = scope->Lookup(target.name);
      if (ns == nullptr || !ns->is_namespace()) {
        return PositionError(
            target.pos, Status::InvalidArgument("cannot assign attribute on non-namespace object"));
      }
      if (!target.attr.empty() && target.attr[0] == '_') {
        return PositionError(
            target.pos, Status::InvalidArgument("Chat templates cannot store underscore-prefixed "
                                                "attributes on a namespace, but got '" +
                                                target.attr + "'. Please rename the attribute."));
      }
      ns->ns().attrs.Set(Value::String(target.attr), v);
      return Status::Ok();
    }
    case ExprKind::kTuple: {
      auto items = Iterate(v);
      if (!items.ok()) {
        return PositionError(target.pos, Status::InvalidArgument("cannot unpack non-iterable " +
                                                                 TypeName(v) + " object"));
      }
      const List& l = *items;
      if (l.size() != target.kids.size()) {
        return PositionError(target.pos, Status::InvalidArgument(
                                             l.size() < target.kids.size()
                                                 ? "not enough values to unpack (expected " +
                                                       std::to_string(target.kids.size()) +
                                                       ", got " + std::to_string(l.size()) + ")"
                                                 : "too many values to unpack (expected " +
                                                       std::to_string(target.kids.size()) + ")"));
      }
      for (size_t i = 0; i < l.size(); ++i) {
        JISU_RETURN_IF_ERROR(Assign(*target.kids[i], l[i], scope));
      }
      return Status::Ok();
    }
    default:
      return PositionError(target.pos, Status::InvalidArgument("can't assign to this expression"));
  }
}

Status Interp::ExecFor(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  JISU_ASSIGN_OR_RETURN(Value iterable, Eval(*s.expr, scope));
  auto items_or = Iterate(iterable);
  if (!items_or.ok()) return PositionError(s.expr->pos, items_or.status());
  List items = std::move(items_or).value();
  if (s.cond) {
    List kept;
    for (auto& item : items) {
      JISU_RETURN_IF_ERROR(Step());
      auto iter_scope = std::make_shared<Scope>(scope);
      JISU_RETURN_IF_ERROR(Assign(*s.target, item, iter_scope));
      JISU_ASSIGN_OR_RETURN(Value keep, Eval(*s.cond, iter_scope));
      if (Truthy(keep)) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    if (s.else_body.empty()) return Status::Ok();
    auto else_scope = std::make_shared<Scope>(scope);
    return Exec(s.else_body, else_scope);
  }
  auto info = std::make_shared<LoopInfo>();
  info->items = std::make_shared<const List>(std::move(items));
  Value loop = Value::MakeLoop(info);
  const List& all = *info->items;
  for (size_t i = 0; i < all.size(); ++i) {
    JISU_RETURN_IF_ERROR(Step());
    info->index0 = int64_t(i);
    auto iter_scope = std::make_shared<Scope>(scope);
    iter_scope->Set("loop", loop);
    JISU_RETURN_IF_ERROR(Assign(*s.target, all[i], iter_scope));
    JISU_RETURN_IF_ERROR(Exec(s.body, iter_scope));
    if (flow_ == Flow::kBreak) {
      flow_ = Flow::kNormal;
      break;
    }
    flow_ = Flow::kNormal;
  }
  return Status::Ok();
}

Status Interp::ExecStmt(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  JISU_RETURN_IF_ERROR(Step());
  if (nesting_ >= limits_.max_nesting) {
    return Status::ResourceExhausted("chat template exceeded the nesting limit");
  }
  ++nesting_;
  Status st = ExecStmtInner(s, scope);
  --nesting_;
  return st;
}

Status Interp::ExecStmtInner(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  switch (s.kind) {
    case StmtKind::kData:
      return Emit(s.text);
    case StmtKind::kOutput: {
      JISU_ASSIGN_OR_RETURN(Value v, Eval(*s.expr, scope));
      if (v.is_string()) return Emit(v.s());
      return Emit(Str(v));
    }
    case StmtKind::kIf: {
      JISU_ASSIGN_OR_RETURN(Value test, Eval(*s.expr, scope));
      return Exec(Truthy(test) ? s.body : s.else_body, scope);
    }
    case StmtKind::kFor:
      return ExecFor(s, scope);
    case StmtKind::kSet: {
      JISU_ASSIGN_OR_RETURN(Value v, Eval(*s.expr, scope));
      return Assign(*s.target, v, scope);
    }
    case StmtKind::kSetBlock: {
      auto inner = std::make_shared<Scope>(scope);
      JISU_ASSIGN_OR_RETURN(std::string text, Capture(s.body, inner));
      Value v = Value::String(std::move(text));
      if (s.filter) {
        // The filter chain was parsed with an empty subject at its innermost end.
        std::vector<const Expr*> chain;
        for (const Expr* f = s.filter.get(); f != nullptr; f = f->kids[0].get()) {
          chain.push_back(f);
        }
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
          CallArgs args;
          JISU_RETURN_IF_ERROR(EvalArgs((*it)->call, scope, &args));
          auto r = ApplyFilter(*this, (*it)->name, v, args);
          if (!r.ok()) return PositionError((*it)->pos, r.status());
          v = std::move(r).value();
        }
      }
      return Assign(*s.target, v, scope);
    }
    case StmtKind::kFilterBlock: {
      auto inner = std::make_shared<Scope>(scope);
      JISU_ASSIGN_OR_RETURN(std::string text, Capture(s.body, inner));
      Value v = Value::String(std::move(text));
      std::vector<const Expr*> chain;
      for (const Expr* f = s.filter.get(); f != nullptr; f = f->kids[0].get()) chain.push_back(f);
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        CallArgs args;
        JISU_RETURN_IF_ERROR(EvalArgs((*it)->call, scope, &args));
        auto r = ApplyFilter(*this, (*it)->name, v, args);
        if (!r.ok()) return PositionError((*it)->pos, r.status());
        v = std::move(r).value();
      }
      return Emit(Str(v));
    }
    case StmtKind::kMacro: {
      JISU_ASSIGN_OR_RETURN(Value m, MakeMacro(s, scope, false));
      scope->Set(s.name, std::move(m));
      return Status::Ok();
    }
    case StmtKind::kCallBlock: {
      const Expr& call = *s.expr;
      JISU_ASSIGN_OR_RETURN(Value fn, Eval(*call.kids[0], scope));
      CallArgs args;
      JISU_RETURN_IF_ERROR(EvalArgs(call.call, scope, &args));
      JISU_ASSIGN_OR_RETURN(Value caller, MakeMacro(s, scope, true));
      args.kw.emplace_back("caller", std::move(caller));
      auto r = Call(fn, args);
      if (!r.ok()) return PositionError(call.pos, r.status());
      return Emit(Str(*r));
    }
    case StmtKind::kWith: {
      auto inner = std::make_shared<Scope>(scope);
      for (size_t i = 0; i < s.params.size(); ++i) {
        JISU_ASSIGN_OR_RETURN(Value v, Eval(*s.defaults[i], scope));
        inner->Set(s.params[i], std::move(v));
      }
      return Exec(s.body, inner);
    }
    case StmtKind::kScope: {
      auto inner = std::make_shared<Scope>(scope);
      return Exec(s.body, inner);
    }
    case StmtKind::kBreak:
      flow_ = Flow::kBreak;
      return Status::Ok();
    case StmtKind::kContinue:
      flow_ = Flow::kContinue;
      return Status::Ok();
  }
  return Status::Internal("unknown statement");
}

Result<Value> Interp::MakeMacro(const Stmt& s, const std::shared_ptr<Scope>& scope,
                                bool is_caller) {
  auto fn = std::make_shared<Callable>();
  fn->name = is_caller ? "caller" : s.name;
  const Stmt* m = &s;
  std::weak_ptr<Scope> def = scope;
  fn->fn = [m, def](Interp& in, CallArgs& args) -> Result<Value> {
    return in.InvokeMacro(*m, def, args);
  };
  return Value::MakeCallable(std::move(fn));
}

Result<Value> Interp::InvokeMacro(const Stmt& m, const std::weak_ptr<Scope>& def, CallArgs& args) {
  std::shared_ptr<Scope> parent = def.lock();
  if (!parent) parent = globals_;
  auto scope = std::make_shared<Scope>(parent);
  const std::string name = m.kind == StmtKind::kMacro ? m.name : "caller";
  size_t n = m.params.size();
  size_t first_default = n - m.defaults.size();
  std::vector<bool> used_kw(args.kw.size(), false);
  for (size_t i = 0; i < n; ++i) {
    const std::string& p = m.params[i];
    if (i < args.pos.size()) {
      scope->Set(p, args.pos[i]);
      continue;
    }
    bool found = false;
    for (size_t k = 0; k < args.kw.size(); ++k) {
      if (!used_kw[k] && args.kw[k].first == p) {
        scope->Set(p, args.kw[k].second);
        used_kw[k] = true;
        found = true;
        break;
      }
    }
    if (found) continue;
    if (i >= first_default) {
      JISU_ASSIGN_OR_RETURN(Value d, Eval(*m.defaults[i - first_default], scope));
      scope->Set(p, std::move(d));
    } else {
      scope->Set(p, Value::Undefined("parameter '" + p + "' was not provided"));
    }
  }
  // `caller` is passed by call blocks; macros that never mention it still accept it.
  Value caller = Value::Undefined("No caller defined");
  Dict extra_kw;
  for (size_t k = 0; k < args.kw.size(); ++k) {
    if (used_kw[k]) continue;
    if (args.kw[k].first == "caller" && (m.uses_caller || !m.uses_kwargs)) {
      if (!m.uses_caller) {
        return Status::InvalidArgument("macro '" + name +
                                       "' was invoked with two values for the special caller "
                                       "argument. This is most likely a bug.");
      }
      caller = args.kw[k].second;
      continue;
    }
    if (!m.uses_kwargs) {
      return Status::InvalidArgument("macro '" + name + "' takes no keyword argument '" +
                                     args.kw[k].first + "'");
    }
    extra_kw.Set(Value::String(args.kw[k].first), args.kw[k].second);
  }
  if (m.uses_caller) scope->Set("caller", caller);
  if (m.uses_kwargs) scope->Set("kwargs", Value::MakeDict(std::move(extra_kw)));
  if (args.pos.size() > n) {
    if (!m.uses_varargs) {
      return Status::InvalidArgument("macro '" + name + "' takes not more than " +
                                     std::to_string(n) + " argument(s)");
    }
    scope->Set("varargs", Value::MakeTuple(List(args.pos.begin() + long(n), args.pos.end())));
  } else if (m.uses_varargs) {
    scope->Set("varargs", Value::MakeTuple({}));
  }
  Flow saved_flow = flow_;
  flow_ = Flow::kNormal;
  auto text = Capture(m.body, scope);
  flow_ = saved_flow;
  if (!text.ok()) return text.status();
  return Value::String(std::move(text).value());
}

Result<Value> Interp::Call(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) return Status::InvalidArgument(fn.undefined_hint());
  if (!fn.is_callable()) {
    std::string msg = "'";
    msg += TypeName(fn);
    msg += "' object is not callable";
    return Status::InvalidArgument(msg);
  }
  JISU_RETURN_IF_ERROR(Step());
  if (call_depth_ >= limits_.max_call_depth) {
    return Status::ResourceExhausted("chat template exceeded the call depth limit (" +
                                     std::to_string(limits_.max_call_depth) + ")");
  }
  ++call_depth_;
  auto r = fn.fn().fn(*this, args);
  --call_depth_;
  return r;
}

Status Interp::EvalArgs(const CallArgsExpr& call, const std::shared_ptr<Scope>& scope,
                        CallArgs* out) {
  for (const auto& e : call.pos) {
    JISU_ASSIGN_OR_RETURN(Value v, Eval(*e, scope));
    out->pos.push_back(std::move(v));
  }
  for (const auto& [k, e] : call.kw) {
    JISU_ASSIGN_OR_RETURN(Value v, Eval(*e, scope));
    out->kw.emplace_back(k, std::move(v));
  }
  if (call.dyn_args) {
    JISU_ASSIGN_OR_RETURN(Value v, Eval(*call.dyn_args, scope));
    auto items = Iterate(v);
    if (!items.ok()) return PositionError(call.dyn_args->pos, items.status());
    for (auto& item : *items) out->pos.push_back(std::move(item));
  }
  if (call.dyn_kwargs) {
    JISU_ASSIGN_OR_RETURN(Value v, Eval(*call.dyn_kwargs, scope));
    if (!v.is_dict()) {
      return PositionError(call.dyn_kwargs->pos,
                           Status::InvalidArgument("argument after ** must be a mapping"));
    }
    for (const auto& [k, val] : v.dict().items) {
      if (!k.is_string()) {
        return PositionError(call.dyn_kwargs->pos,
                             Status::InvalidArgument("keywords must be strings"));
      }
      out->kw.emplace_back(k.s(), val);
    }
  }
  return Status::Ok();
}

Result<Value> Interp::Eval(const Expr& e, const std::shared_ptr<Scope>& scope) {
  if (nesting_ >= limits_.max_nesting) {
    return Status::ResourceExhausted("chat template exceeded the nesting limit");
  }
  ++nesting_;
  auto r = EvalInner(e, scope);
  --nesting_;
  if (!r.ok()) return PositionError(e.pos, r.status());
  return r;
}

Result<Value> Interp::EvalInner(const Expr& e, const std::shared_ptr<Scope>& scope) {
  switch (e.kind) {
    case ExprKind::kConst:
      return e.value;
    case ExprKind::kName: {
      const Value* v = scope->Lookup(e.name);
      if (v == nullptr) return Value::Undefined("'" + e.name + "' is undefined");
      return *v;
    }
    case ExprKind::kNSRef:
      return Status::InvalidArgument("namespace reference used as a value");
    case ExprKind::kGetattr: {
      JISU_ASSIGN_OR_RETURN(Value obj, Eval(*e.kids[0], scope));
      if (obj.is_undefined()) return Status::InvalidArgument(obj.undefined_hint());
      return GetAttr(*this, obj, e.name);
    }
    case ExprKind::kGetitem: {
      JISU_ASSIGN_OR_RETURN(Value obj, Eval(*e.kids[0], scope));
      const Expr& k = *e.kids[1];
      if (k.kind == ExprKind::kSlice) {
        Value parts[3] = {Value::None(), Value::None(), Value::None()};
        for (int i = 0; i < 3; ++i) {
          if (k.kids[size_t(i)]) {
            JISU_ASSIGN_OR_RETURN(parts[i], Eval(*k.kids[size_t(i)], scope));
          }
        }
        if (obj.is_undefined()) return Status::InvalidArgument(obj.undefined_hint());
        return GetSlice(*this, obj, parts[0], parts[1], parts[2]);
      }
      JISU_ASSIGN_OR_RETURN(Value key, Eval(k, scope));
      if (obj.is_undefined()) return Status::InvalidArgument(obj.undefined_hint());
      return GetItem(*this, obj, key);
    }
    case ExprKind::kSlice:
      return Status::InvalidArgument("slice outside of a subscript");
    case ExprKind::kList:
    case ExprKind::kTuple: {
      List items;
      items.reserve(e.kids.size());
      for (const auto& k : e.kids) {
        JISU_ASSIGN_OR_RETURN(Value v, Eval(*k, scope));
        items.push_back(std::move(v));
      }
      return e.kind == ExprKind::kList ? Value::MakeList(std::move(items))
                                       : Value::MakeTuple(std::move(items));
    }
    case ExprKind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.kids.size(); i += 2) {
        JISU_ASSIGN_OR_RETURN(Value k, Eval(*e.kids[i], scope));
        JISU_ASSIGN_OR_RETURN(Value v, Eval(*e.kids[i + 1], scope));
        if (k.is_list() || k.is_dict()) {
          return Status::InvalidArgument("unhashable type: '" + TypeName(k) + "'");
        }
        d.Set(std::move(k), std::move(v));
      }
      return Value::MakeDict(std::move(d));
    }
    case ExprKind::kUnary: {
      JISU_ASSIGN_OR_RETURN(Value v, Eval(*e.kids[0], scope));
      if (e.name == "not") return Value::Bool(!Truthy(v));
      if (v.is_undefined()) return Status::InvalidArgument(v.undefined_hint());
      if (!v.is_number()) {
        return Status::InvalidArgument("bad operand type for unary " + e.name + ": '" +
                                       TypeName(v) + "'");
      }
      if (e.name == "+") return v.is_float() ? v : Value::Int(v.i());
      if (v.is_float()) return Value::Float(-v.f());
      if (v.i() == INT64_MIN) return Status::OutOfRange("integer overflow");
      return Value::Int(-v.i());
    }
    case ExprKind::kBinary: {
      JISU_ASSIGN_OR_RETURN(Value l, Eval(*e.kids[0], scope));
      if (e.name == "and") {
        if (!Truthy(l)) return l;
        return Eval(*e.kids[1], scope);
      }
      if (e.name == "or") {
        if (Truthy(l)) return l;
        return Eval(*e.kids[1], scope);
      }
      JISU_ASSIGN_OR_RETURN(Value r, Eval(*e.kids[1], scope));
      return BinaryOp(*this, e.name, l, r);
    }
    case ExprKind::kConcat: {
      std::string out;
      for (const auto& k : e.kids) {
        JISU_ASSIGN_OR_RETURN(Value v, Eval(*k, scope));
        if (v.is_string()) {
          out += v.s();
        } else {
          out += Str(v);
        }
        JISU_RETURN_IF_ERROR(CheckString(out.size()));
      }
      JISU_RETURN_IF_ERROR(Charge(out.size()));
      return Value::String(std::move(out));
    }
    case ExprKind::kCompare: {
      JISU_ASSIGN_OR_RETURN(Value left, Eval(*e.kids[0], scope));
      for (size_t i = 0; i < e.ops.size(); ++i) {
        JISU_ASSIGN_OR_RETURN(Value right, Eval(*e.kids[i + 1], scope));
        const std::string& op = e.ops[i];
        bool ok;
        if (op == "==") {
          ok = Equals(left, right);
        } else if (op == "!=") {
          ok = !Equals(left, right);
        } else if (op == "in" || op == "notin") {
          JISU_ASSIGN_OR_RETURN(bool c, Contains(right, left));
          ok = op == "in" ? c : !c;
        } else {
          JISU_ASSIGN_OR_RETURN(int c, Compare(left, right, op.c_str()));
          if (c == 2) {
            ok = false;  // NaN
          } else if (op == "<") {
            ok = c < 0;
          } else if (op == "<=") {
            ok = c <= 0;
          } else if (op == ">") {
            ok = c > 0;
          } else {
            ok = c >= 0;
          }
        }
        if (!ok) return Value::Bool(false);
        left = std::move(right);
      }
      return Value::Bool(true);
    }
    case ExprKind::kCond: {
      JISU_ASSIGN_OR_RETURN(Value test, Eval(*e.kids[1], scope));
      if (Truthy(test)) return Eval(*e.kids[0], scope);
      if (e.kids[2]) return Eval(*e.kids[2], scope);
      return Value::Undefined(
          "the inline if-expression evaluated to false and no else section was defined.");
    }
    case ExprKind::kFilter: {
      Value subject;
      if (e.kids[0]) {
        JISU_ASSIGN_OR_RETURN(subject, Eval(*e.kids[0], scope));
      }
      CallArgs args;
      JISU_RETURN_IF_ERROR(EvalArgs(e.call, scope, &args));
      JISU_RETURN_IF_ERROR(Step());
      return ApplyFilter(*this, e.name, subject, args);
    }
    case ExprKind::kTest: {
      JISU_ASSIGN_OR_RETURN(Value subject, Eval(*e.kids[0], scope));
      CallArgs args;
      JISU_RETURN_IF_ERROR(EvalArgs(e.call, scope, &args));
      JISU_ASSIGN_OR_RETURN(bool b, ApplyTest(*this, e.name, subject, args));
      return Value::Bool(b);
    }
    case ExprKind::kCall: {
      JISU_ASSIGN_OR_RETURN(Value fn, Eval(*e.kids[0], scope));
      CallArgs args;
      JISU_RETURN_IF_ERROR(EvalArgs(e.call, scope, &args));
      return Call(fn, args);
    }
  }
  return Status::Internal("unknown expression");
}

}  // namespace jisu::jinja
