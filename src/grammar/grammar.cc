#include "grammar/grammar.h"

#include <algorithm>
#include <cstdio>

#include "core/utf8.h"

namespace jisu::grammar {

Expr Expr::Literal(std::string_view bytes) {
  if (bytes.empty()) return Empty();
  Expr e;
  e.kind = Kind::kLiteral;
  e.literal = std::string(bytes);
  return e;
}

Expr Expr::Class(std::vector<CharRange> ranges, bool negated) {
  Expr e;
  e.kind = Kind::kClass;
  e.ranges = std::move(ranges);
  e.negated = negated;
  return e;
}

Expr Expr::Ref(uint32_t rule) {
  Expr e;
  e.kind = Kind::kRef;
  e.rule = rule;
  return e;
}

namespace {

Expr Flatten(Expr::Kind kind, std::vector<Expr> items) {
  Expr e;
  e.kind = kind;
  for (Expr& item : items) {
    if (item.kind == kind) {
      for (Expr& c : item.children) e.children.push_back(std::move(c));
    } else if (kind == Expr::Kind::kSeq && item.kind == Expr::Kind::kEmpty) {
      continue;  // "" inside a sequence adds nothing
    } else {
      e.children.push_back(std::move(item));
    }
  }
  if (e.children.empty()) return Expr::Empty();
  if (e.children.size() == 1) return std::move(e.children[0]);
  return e;
}

}  // namespace

Expr Expr::Seq(std::vector<Expr> items) { return Flatten(Kind::kSeq, std::move(items)); }
Expr Expr::Alt(std::vector<Expr> items) {
  if (items.empty()) return Empty();
  return Flatten(Kind::kAlt, std::move(items));
}

Expr Expr::Repeat(Expr item, uint32_t min, uint32_t max) {
  if (max == 0 || item.kind == Kind::kEmpty) return Empty();
  if (min == 1 && max == 1) return item;
  Expr e;
  e.kind = Kind::kRepeat;
  e.min = min;
  e.max = max;
  e.children.push_back(std::move(item));
  return e;
}

std::vector<CharRange> NormalizeClass(const std::vector<CharRange>& ranges, bool negated) {
  std::vector<CharRange> r;
  for (CharRange c : ranges) {
    if (c.lo > c.hi || c.lo > kMaxCodePoint) continue;
    c.hi = std::min(c.hi, kMaxCodePoint);
    r.push_back(c);
  }
  std::sort(r.begin(), r.end(), [](CharRange a, CharRange b) { return a.lo < b.lo; });
  std::vector<CharRange> merged;
  for (CharRange c : r) {
    if (!merged.empty() && c.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, c.hi);
    } else {
      merged.push_back(c);
    }
  }
  if (negated) {
    std::vector<CharRange> comp;
    uint32_t next = 0;
    for (CharRange c : merged) {
      if (c.lo > next) comp.push_back({next, c.lo - 1});
      next = c.hi + 1;
    }
    if (next <= kMaxCodePoint) comp.push_back({next, kMaxCodePoint});
    merged.swap(comp);
  }
  // Surrogates have no UTF-8 encoding.
  std::vector<CharRange> out;
  for (CharRange c : merged) {
    if (c.hi < 0xD800 || c.lo > 0xDFFF) {
      out.push_back(c);
      continue;
    }
    if (c.lo < 0xD800) out.push_back({c.lo, 0xD7FF});
    if (c.hi > 0xDFFF) out.push_back({0xE000, c.hi});
  }
  return out;
}

Result<uint32_t> Grammar::AddRule(std::string name) {
  if (rules_.size() >= kMaxRules) {
    return Status::ResourceExhausted("the grammar has more than " + std::to_string(kMaxRules) +
                                     " rules");
  }
  if (index_.count(name)) return Status::InvalidArgument("rule '" + name + "' is defined twice");
  const uint32_t id = static_cast<uint32_t>(rules_.size());
  index_.emplace(name, id);
  rules_.push_back(Rule{std::move(name), Expr::Empty()});
  return id;
}

Result<uint32_t> Grammar::AddUniqueRule(std::string_view base) {
  std::string name(base);
  for (int i = 1; index_.count(name); ++i) name = std::string(base) + "-" + std::to_string(i);
  return AddRule(std::move(name));
}

int64_t Grammar::Find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? -1 : static_cast<int64_t>(it->second);
}

namespace {

void AppendCodePoint(std::string* out, uint32_t cp, bool in_class) {
  char buf[16];
  switch (cp) {
    case '\n':
      *out += "\\n";
      return;
    case '\r':
      *out += "\\r";
      return;
    case '\t':
      *out += "\\t";
      return;
    case '\\':
      *out += "\\\\";
      return;
    default:
      break;
  }
  if (cp < 0x20 || cp == 0x7F) {
    std::snprintf(buf, sizeof buf, "\\x%02X", cp);
    *out += buf;
    return;
  }
  if (!in_class && cp == '"') {
    *out += "\\\"";
    return;
  }
  if (in_class && (cp == ']' || cp == '-' || cp == '^' || cp == '[')) {
    *out += '\\';
    *out += static_cast<char>(cp);
    return;
  }
  utf8::Append(out, static_cast<char32_t>(cp));
}

void Print(const Expr& e, const Grammar& g, std::string* out, bool nested) {
  switch (e.kind) {
    case Expr::Kind::kEmpty:
      *out += "\"\"";
      return;
    case Expr::Kind::kLiteral: {
      *out += '"';
      size_t pos = 0;
      while (pos < e.literal.size()) {
        char32_t cp;
        size_t len;
        if (utf8::Next(e.literal, pos, &cp, &len) != utf8::Step::kValid) {
          cp = static_cast<unsigned char>(e.literal[pos]);
          len = 1;
        }
        AppendCodePoint(out, cp, false);
        pos += len;
      }
      *out += '"';
      return;
    }
    case Expr::Kind::kClass: {
      if (e.negated && e.ranges.empty()) {
        *out += '.';
        return;
      }
      *out += e.negated ? "[^" : "[";
      for (CharRange c : e.ranges) {
        AppendCodePoint(out, c.lo, true);
        if (c.hi != c.lo) {
          *out += '-';
          AppendCodePoint(out, c.hi, true);
        }
      }
      *out += ']';
      return;
    }
    case Expr::Kind::kRef:
      *out += g.rule(e.rule).name;
      return;
    case Expr::Kind::kSeq:
    case Expr::Kind::kAlt: {
      const bool alt = e.kind == Expr::Kind::kAlt;
      if (nested) *out += '(';
      for (size_t i = 0; i < e.children.size(); ++i) {
        if (i) *out += alt ? " | " : " ";
        const bool wrap =
            alt ? e.children[i].kind == Expr::Kind::kAlt
                : e.children[i].kind == Expr::Kind::kAlt || e.children[i].kind == Expr::Kind::kSeq;
        Print(e.children[i], g, out, wrap);
      }
      if (nested) *out += ')';
      return;
    }
    case Expr::Kind::kRepeat: {
      const Expr& c = e.children[0];
      const bool wrap =
          c.kind == Expr::Kind::kSeq || c.kind == Expr::Kind::kAlt || c.kind == Expr::Kind::kRepeat;
      Print(c, g, out, wrap);
      if (e.min == 0 && e.max == kUnbounded) {
        *out += '*';
      } else if (e.min == 1 && e.max == kUnbounded) {
        *out += '+';
      } else if (e.min == 0 && e.max == 1) {
        *out += '?';
      } else {
        *out += '{';
        *out += std::to_string(e.min);
        if (e.max != e.min) {
          *out += ',';
          if (e.max != kUnbounded) *out += std::to_string(e.max);
        }
        *out += '}';
      }
      return;
    }
  }
}

}  // namespace

std::string ExprToGbnf(const Expr& e, const Grammar& g) {
  std::string out;
  Print(e, g, &out, false);
  return out;
}

std::string Grammar::ToGbnf() const {
  std::string out;
  auto add = [&](uint32_t i) {
    out += rules_[i].name + " ::= " + ExprToGbnf(rules_[i].body, *this) + "\n";
  };
  if (!rules_.empty()) add(root_);
  for (uint32_t i = 0; i < rules_.size(); ++i) {
    if (i != root_) add(i);
  }
  return out;
}

namespace {

void RemapRefs(Expr* e, const std::vector<uint32_t>& ids) {
  if (e->kind == Expr::Kind::kRef) e->rule = ids[e->rule];
  for (Expr& c : e->children) RemapRefs(&c, ids);
}

}  // namespace

Result<uint32_t> ImportRules(const Grammar& from, std::string_view prefix, Grammar* into) {
  if (from.rules().empty()) return Status::InvalidArgument("the imported grammar has no rules");
  // All names first: bodies may refer to any rule, before or after them.
  std::vector<uint32_t> ids;
  ids.reserve(from.rules().size());
  for (const Rule& r : from.rules()) {
    JISU_ASSIGN_OR_RETURN(uint32_t id, into->AddUniqueRule(std::string(prefix) + r.name));
    ids.push_back(id);
  }
  for (size_t i = 0; i < from.rules().size(); ++i) {
    Expr body = from.rules()[i].body;
    RemapRefs(&body, ids);
    into->SetBody(ids[i], std::move(body));
  }
  return ids[from.root()];
}

}  // namespace jisu::grammar
