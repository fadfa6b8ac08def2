// The chat-template operators with Python semantics: `in` (Contains) and the binary
// arithmetic + - * / // % ** (BinaryOp), including int overflow checks, float floor
// division/modulo, and sequence repetition and concatenation under the interpreter's size
// limits. Comparisons (== < ...) are Equals/Compare in jinja_value.cc.
#include <cmath>

#include "chat/jinja_builtins.h"
#include "chat/jinja_builtins_internal.h"

namespace jisu::jinja {
using builtins::TypeErr;

// ---- containment and arithmetic

Result<bool> Contains(const Value& c, const Value& item) {
  switch (c.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        return TypeErr("'in <string>' requires string as left operand, not " + TypeName(item));
      }
      return c.s().find(item.s()) != std::string::npos;
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      for (const auto& x : c.list()) {
        if (Equals(x, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      if (item.is_list() || item.is_dict())
        return TypeErr("unhashable type: '" + TypeName(item) + "'");
      return c.dict().Find(item) != nullptr;
    case Value::Kind::kLoop:
      for (const auto& x : *c.loop().items) {
        if (Equals(x, item)) return true;
      }
      return false;
    case Value::Kind::kIterator: {  // consumes up to the match, as Python's `in`
      IteratorState& it = c.iter();
      while (it.next < it.items.size()) {
        if (Equals(it.items[it.next++], item)) return true;
      }
      return false;
    }
    default:
      return TypeErr("argument of type '" + TypeName(c) + "' is not iterable");
  }
}

namespace {

Status OperandError(const char* op, const Value& a, const Value& b) {
  return TypeErr(std::string("unsupported operand type(s) for ") + op + ": '" + TypeName(a) +
                 "' and '" + TypeName(b) + "'");
}

Result<Value> Repeat(Interp& in, const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    size_t len = seq.s().size();
    if (len && uint64_t(n) > in.limits().max_value_bytes / len) {
      return Status::ResourceExhausted("chat template produced a string over the size limit");
    }
    JISU_RETURN_IF_ERROR(in.Charge(len * size_t(n)));
    std::string out;
    out.reserve(len * size_t(n));
    for (int64_t i = 0; i < n; ++i) out += seq.s();
    return seq.is_markup() ? Value::Markup(std::move(out)) : Value::String(std::move(out));
  }
  size_t len = seq.list().size();
  if (len && uint64_t(n) > in.limits().max_list_items / len) {
    return Status::ResourceExhausted("chat template produced a list over the size limit");
  }
  JISU_RETURN_IF_ERROR(in.Charge(len * size_t(n) * 16));
  List out;
  out.reserve(len * size_t(n));
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list().begin(), seq.list().end());
  return seq.is_list() ? Value::MakeList(std::move(out)) : Value::MakeTuple(std::move(out));
}

// Python float floor division and modulo.
void FloatDivMod(double x, double y, double* div, double* mod) {
  double m = std::fmod(x, y);
  double d = (x - m) / y;
  if (m != 0) {
    if ((y < 0) != (m < 0)) {
      m += y;
      d -= 1.0;
    }
  } else {
    m = std::copysign(0.0, y);
  }
  double fd;
  if (d != 0) {
    fd = std::floor(d);
    if (d - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, x / y);
  }
  *div = fd;
  *mod = m;
}

}  // namespace

Result<Value> BinaryOp(Interp& in, const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) return TypeErr(a.undefined_hint());
  if (b.is_undefined()) return TypeErr(b.undefined_hint());
  const char* o = op.c_str();
  bool nums = a.is_number() && b.is_number();
  bool fl = nums && (a.is_float() || b.is_float());
  if (op == "+") {
    if (nums) {
      if (fl) return Value::Float(a.f() + b.f());
      int64_t r;
      if (__builtin_add_overflow(a.i(), b.i(), &r)) return Status::OutOfRange("integer overflow");
      return Value::Int(r);
    }
    if (a.is_string() && b.is_string()) {
      JISU_RETURN_IF_ERROR(in.CheckString(a.s().size() + b.s().size()));
      JISU_RETURN_IF_ERROR(in.Charge(a.s().size() + b.s().size()));
      if (a.is_markup() || b.is_markup()) {  // Markup escapes the plain operand
        std::string x = a.is_markup() ? a.s() : HtmlEscape(a.s());
        std::string y = b.is_markup() ? b.s() : HtmlEscape(b.s());
        JISU_RETURN_IF_ERROR(in.CheckString(x.size() + y.size()));
        return Value::Markup(x + y);
      }
      return Value::String(a.s() + b.s());
    }
    if ((a.is_list() && b.is_list()) || (a.is_tuple() && b.is_tuple())) {
      JISU_RETURN_IF_ERROR(in.CheckList(a.list().size() + b.list().size()));
      JISU_RETURN_IF_ERROR(in.Charge((a.list().size() + b.list().size()) * 16));
      List out = a.list();
      out.insert(out.end(), b.list().begin(), b.list().end());
      return a.is_list() ? Value::MakeList(std::move(out)) : Value::MakeTuple(std::move(out));
    }
    if (a.is_string() || a.is_list() || a.is_tuple()) {
      return TypeErr("can only concatenate " + TypeName(a) + " (not \"" + TypeName(b) + "\") to " +
                     TypeName(a));
    }
    return OperandError(o, a, b);
  }
  if (op == "-") {
    if (!nums) return OperandError(o, a, b);
    if (fl) return Value::Float(a.f() - b.f());
    int64_t r;
    if (__builtin_sub_overflow(a.i(), b.i(), &r)) return Status::OutOfRange("integer overflow");
    return Value::Int(r);
  }
  if (op == "*") {
    if (nums) {
      if (fl) return Value::Float(a.f() * b.f());
      int64_t r;
      if (__builtin_mul_overflow(a.i(), b.i(), &r)) return Status::OutOfRange("integer overflow");
      return Value::Int(r);
    }
    if ((a.is_string() || a.is_sequence()) && b.is_integral()) return Repeat(in, a, b.i());
    if ((b.is_string() || b.is_sequence()) && a.is_integral()) return Repeat(in, b, a.i());
    if (a.is_string() || a.is_sequence()) {
      return TypeErr("can't multiply sequence by non-int of type '" + TypeName(b) + "'");
    }
    return OperandError(o, a, b);
  }
  if (op == "/") {
    if (!nums) return OperandError(o, a, b);
    if (b.f() == 0) return TypeErr("division by zero");
    return Value::Float(a.f() / b.f());
  }
  if (op == "//" || op == "%") {
    if (op == "%" && a.is_string()) {
      JISU_ASSIGN_OR_RETURN(std::string s, PercentFormat(a.s(), b, in.limits().max_value_bytes));
      JISU_RETURN_IF_ERROR(in.Charge(s.size()));
      return Value::String(std::move(s));
    }
    if (!nums) return OperandError(o, a, b);
    if (fl) {
      if (b.f() == 0) return TypeErr(op == "%" ? "float modulo" : "float floor division by zero");
      double d, m;
      FloatDivMod(a.f(), b.f(), &d, &m);
      return Value::Float(op == "%" ? m : d);
    }
    int64_t x = a.i(), y = b.i();
    if (y == 0) {
      return TypeErr(op == "%" ? "integer modulo by zero" : "integer division or modulo by zero");
    }
    if (x == INT64_MIN && y == -1) {
      if (op == "%") return Value::Int(0);
      return Status::OutOfRange("integer overflow");
    }
    int64_t q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) {
      q -= 1;
      r += y;
    }
    return Value::Int(op == "%" ? r : q);
  }
  if (op == "**") {
    if (!nums) return OperandError("** or pow()", a, b);
    if (!fl && b.i() >= 0) {
      int64_t base = a.i(), e = b.i(), r = 1;
      while (e > 0) {
        if (e & 1) {
          if (__builtin_mul_overflow(r, base, &r)) return Status::OutOfRange("integer overflow");
        }
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) {
          return Status::OutOfRange("integer overflow");
        }
      }
      return Value::Int(r);
    }
    double x = a.f(), y = b.f();
    if (x == 0 && y < 0) return TypeErr("0.0 cannot be raised to a negative power");
    if (x < 0 && std::isfinite(y) && y != std::floor(y)) {
      return Status::Unsupported("complex numbers are not supported");
    }
    double r = std::pow(x, y);
    if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) {
      return Status::OutOfRange("(34, 'Numerical result out of range')");
    }
    return Value::Float(r);
  }
  return TypeErr("unknown operator " + op);
}
}  // namespace jisu::jinja
