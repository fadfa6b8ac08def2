#include "grammar/regex_to_grammar.h"

#include <algorithm>
#include <cstdio>

#include "core/utf8.h"

namespace jisu::grammar {
namespace {

// ECMAScript's \s and Python's \s differ a little (Python adds U+001C-U+001F and U+0085,
// ECMAScript adds U+FEFF): \s generates only characters both call space, \S only characters
// neither does, so a string generated here matches under either engine.
const std::vector<CharRange> kSpaceBoth = {{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},
                                           {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
                                           {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}};
const std::vector<CharRange> kSpaceEither = {{'\t', '\r'},     {0x1C, 0x20},     {0x85, 0x85},
                                             {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
                                             {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                                             {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const std::vector<CharRange> kDigit = {{'0', '9'}};
const std::vector<CharRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CharRange> kLineTerminators = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A parsed class: positive ranges after normalization.
struct ClassSet {
  std::vector<CharRange> ranges;
  void Add(const std::vector<CharRange>& r) { ranges.insert(ranges.end(), r.begin(), r.end()); }
  void AddNegated(const std::vector<CharRange>& r) { Add(NormalizeClass(r, true)); }
};

class RegexParser {
 public:
  RegexParser(std::string_view s, RegexTarget target) : s_(s), target_(target) {}

  Result<Expr> Parse() {
    if (s_.size() > kMaxRegexBytes) {
      return Status::InvalidArgument("the regex is longer than " + std::to_string(kMaxRegexBytes) +
                                     " bytes");
    }
    if (!utf8::IsValid(s_)) return Status::InvalidArgument("the regex is not valid UTF-8");
    std::vector<Expr> alts;
    for (;;) {
      bool start_anchor = false, end_anchor = false;
      if (Peek() == '^') {
        ++pos_;
        start_anchor = true;
      }
      JISU_ASSIGN_OR_RETURN(Expr seq, ParseSequence(0, /*top=*/true, &end_anchor));
      if (target_ == RegexTarget::kJsonString) {
        std::vector<Expr> parts;
        if (!start_anchor) parts.push_back(Expr::Star(AnyJsonChar()));
        parts.push_back(std::move(seq));
        if (!end_anchor) parts.push_back(Expr::Star(AnyJsonChar()));
        seq = Expr::Seq(std::move(parts));
      }
      alts.push_back(std::move(seq));
      if (Peek() != '|') break;
      ++pos_;
    }
    if (pos_ < s_.size()) return Error("unmatched ')'");
    return Expr::Alt(std::move(alts));
  }

 private:
  Status Error(const std::string& what) const {
    return Status::InvalidArgument("regex at offset " + std::to_string(pos_) + ": " + what);
  }
  char Peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  bool AtEnd() const { return pos_ >= s_.size(); }

  static Expr AnyJsonChar() { return JsonClass({}, /*negated=*/true); }

  Expr CharExpr(uint32_t cp) const {
    if (target_ == RegexTarget::kJsonString) return JsonChar(cp);
    return Expr::Char(cp);
  }
  Expr ClassExpr(const std::vector<CharRange>& ranges, bool negated) const {
    if (target_ == RegexTarget::kJsonString) return JsonClass(ranges, negated);
    return Expr::Class(ranges, negated);
  }

  Result<Expr> ParseAlternatives(int depth) {
    if (depth > kMaxRegexNesting) {
      return Error("groups are nested deeper than " + std::to_string(kMaxRegexNesting));
    }
    std::vector<Expr> alts;
    for (;;) {
      bool unused = false;
      JISU_ASSIGN_OR_RETURN(Expr seq, ParseSequence(depth, false, &unused));
      alts.push_back(std::move(seq));
      if (Peek() != '|') break;
      ++pos_;
    }
    return Expr::Alt(std::move(alts));
  }

  // Until '|', ')' or the end. At top level a final '$' anchors the alternative.
  Result<Expr> ParseSequence(int depth, bool top, bool* end_anchor) {
    std::vector<Expr> items;
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      if (Peek() == '$') {
        ++pos_;
        if (top && (AtEnd() || Peek() == '|')) {
          *end_anchor = true;
          break;
        }
        --pos_;
        return Error("'$' is supported only at the end of the pattern");
      }
      if (Peek() == '^') return Error("'^' is supported only at the start of the pattern");
      JISU_ASSIGN_OR_RETURN(Expr atom, ParseAtom(depth));
      JISU_ASSIGN_OR_RETURN(atom, ParseQuantifier(std::move(atom)));
      items.push_back(std::move(atom));
    }
    return Expr::Seq(std::move(items));
  }

  Result<Expr> ParseAtom(int depth) {
    const char c = Peek();
    if (c == '(') {
      ++pos_;
      if (Peek() == '?') {
        if (Peek(1) == ':') {
          pos_ += 2;
        } else if (Peek(1) == '<' && Peek(2) != '=' && Peek(2) != '!') {
          pos_ += 2;
          while (!AtEnd() && Peek() != '>') ++pos_;
          if (AtEnd()) return Error("unterminated group name");
          ++pos_;
        } else if (Peek(1) == 'P' && Peek(2) == '<') {
          pos_ += 3;
          while (!AtEnd() && Peek() != '>') ++pos_;
          if (AtEnd()) return Error("unterminated group name");
          ++pos_;
        } else {
          return Error("lookaround and inline flags are not supported");
        }
      }
      JISU_ASSIGN_OR_RETURN(Expr inner, ParseAlternatives(depth + 1));
      if (Peek() != ')') return Error("missing ')'");
      ++pos_;
      return inner;
    }
    if (c == '[') return ParseClass();
    if (c == '.') {
      ++pos_;
      return ClassExpr(kLineTerminators, /*negated=*/true);
    }
    if (c == '*' || c == '+' || c == '?') return Error("nothing to repeat");
    if (c == '\\') {
      ++pos_;
      ClassSet set;
      uint32_t cp = 0;
      JISU_ASSIGN_OR_RETURN(bool is_class, ParseEscape(/*in_class=*/false, &cp, &set));
      if (is_class) return ClassExpr(NormalizeClass(set.ranges, false), false);
      return CharExpr(cp);
    }
    char32_t cp;
    size_t len;
    utf8::Next(s_, pos_, &cp, &len);
    pos_ += len;
    return CharExpr(static_cast<uint32_t>(cp));
  }

  Result<uint32_t> HexDigits(int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      const int h = Hex(Peek());
      if (h < 0) return Error("expected " + std::to_string(n) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    return v;
  }

  // After a backslash. Returns true with `set` filled for a class escape (\d ...), else false
  // with `cp` set.
  Result<bool> ParseEscape(bool in_class, uint32_t* cp, ClassSet* set) {
    if (AtEnd()) return Error("pattern ends with '\\'");
    const char e = s_[pos_++];
    switch (e) {
      case 'd':
        set->Add(kDigit);
        return true;
      case 'D':
        set->AddNegated(kDigit);
        return true;
      case 'w':
        set->Add(kWord);
        return true;
      case 'W':
        set->AddNegated(kWord);
        return true;
      case 's':
        set->Add(kSpaceBoth);
        return true;
      case 'S':
        set->AddNegated(kSpaceEither);
        return true;
      case 'n':
        *cp = '\n';
        return false;
      case 'r':
        *cp = '\r';
        return false;
      case 't':
        *cp = '\t';
        return false;
      case 'f':
        *cp = '\f';
        return false;
      case 'v':
        *cp = '\v';
        return false;
      case '0':
        if (Peek() >= '0' && Peek() <= '9') return Error("octal escapes are not supported");
        *cp = 0;
        return false;
      case 'x': {
        JISU_ASSIGN_OR_RETURN(*cp, HexDigits(2));
        return false;
      }
      case 'u': {
        if (Peek() == '{') {
          ++pos_;
          uint32_t v = 0;
          int n = 0;
          while (Hex(Peek()) >= 0 && n < 6)
            v = v * 16 + static_cast<uint32_t>(Hex(s_[pos_++])), ++n;
          if (n == 0 || Peek() != '}') return Error("bad \\u{...} escape");
          ++pos_;
          *cp = v;
        } else {
          JISU_ASSIGN_OR_RETURN(*cp, HexDigits(4));
        }
        if (*cp > kMaxCodePoint || (*cp >= 0xD800 && *cp <= 0xDFFF)) {
          return Error("escape is not a Unicode scalar value (surrogates are not supported)");
        }
        return false;
      }
      case 'b':
        if (in_class) {
          *cp = '\b';
          return false;
        }
        return Error("word boundaries (\\b) are not supported");
      case 'B':
        return Error("\\B is not supported");
      case 'c':
      case 'k':
      case 'p':
      case 'P':
        return Error(std::string("\\") + e + " is not supported");
      default:
        if (e >= '1' && e <= '9') return Error("backreferences are not supported");
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
          return Error(std::string("unknown escape \\") + e);
        }
        break;
    }
    --pos_;
    char32_t c;
    size_t len;
    utf8::Next(s_, pos_, &c, &len);
    pos_ += len;
    *cp = static_cast<uint32_t>(c);
    return false;
  }

  Result<Expr> ParseClass() {
    ++pos_;  // [
    bool negated = false;
    if (Peek() == '^') {
      negated = true;
      ++pos_;
    }
    ClassSet set;
    while (!AtEnd() && Peek() != ']') {
      uint32_t lo = 0;
      bool lo_is_class = false;
      JISU_RETURN_IF_ERROR(ClassAtom(&lo, &lo_is_class, &set));
      if (Peek() == '-' && Peek(1) != ']' && pos_ + 1 < s_.size() && !lo_is_class) {
        ++pos_;
        uint32_t hi = 0;
        bool hi_is_class = false;
        JISU_RETURN_IF_ERROR(ClassAtom(&hi, &hi_is_class, &set));
        if (hi_is_class) return Error("a class escape cannot end a range");
        if (hi < lo) return Error("range out of order in character class");
        set.ranges.push_back({lo, hi});
      } else if (!lo_is_class) {
        set.ranges.push_back({lo, lo});
      }
    }
    if (AtEnd()) return Error("missing ']'");
    ++pos_;
    return ClassExpr(NormalizeClass(set.ranges, negated), false);
  }

  Status ClassAtom(uint32_t* cp, bool* is_class, ClassSet* set) {
    if (Peek() == '\\') {
      ++pos_;
      JISU_ASSIGN_OR_RETURN(*is_class, ParseEscape(/*in_class=*/true, cp, set));
      return Status::Ok();
    }
    if (Peek() == '[' && (Peek(1) == ':' || Peek(1) == '=' || Peek(1) == '.')) {
      return Error("POSIX classes are not supported");
    }
    char32_t c;
    size_t len;
    utf8::Next(s_, pos_, &c, &len);
    pos_ += len;
    *cp = static_cast<uint32_t>(c);
    *is_class = false;
    return Status::Ok();
  }

  // {n}, {n,}, {n,m}: true and the bounds when the text at pos_ is one (else a literal '{').
  bool Braces(uint32_t* lo, uint32_t* hi, bool* too_big) {
    size_t p = pos_ + 1;
    auto number = [&](uint64_t* v) {
      const size_t start = p;
      *v = 0;
      while (p < s_.size() && s_[p] >= '0' && s_[p] <= '9') {
        *v = std::min<uint64_t>(*v * 10 + static_cast<uint64_t>(s_[p] - '0'), 1u << 30);
        ++p;
      }
      return p > start;
    };
    uint64_t a = 0, b = 0;
    if (!number(&a)) return false;
    b = a;
    if (p < s_.size() && s_[p] == ',') {
      ++p;
      if (!number(&b)) b = kUnbounded;
    }
    if (p >= s_.size() || s_[p] != '}') return false;
    pos_ = p + 1;
    *too_big = a > Grammar::kMaxRepeat || (b != kUnbounded && b > Grammar::kMaxRepeat);
    *lo = static_cast<uint32_t>(a);
    *hi = static_cast<uint32_t>(b);
    return true;
  }

  Result<Expr> ParseQuantifier(Expr atom) {
    uint32_t lo = 0, hi = 0;
    if (!Quantifier(&lo, &hi)) return atom;
    if (lo == kUnbounded)
      return Error("repetition bound above " + std::to_string(Grammar::kMaxRepeat));
    if (hi < lo) return Error("numbers out of order in {} quantifier");
    if (Peek() == '?') ++pos_;  // lazy: the same strings
    uint32_t lo2 = 0, hi2 = 0;
    if (Quantifier(&lo2, &hi2)) return Error("nothing to repeat");
    return Expr::Repeat(std::move(atom), lo, hi);
  }

  // Consumes a quantifier at pos_ if there is one. lo == kUnbounded: a bound is too large.
  bool Quantifier(uint32_t* lo, uint32_t* hi) {
    const char c = Peek();
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      *lo = c == '+' ? 1 : 0;
      *hi = c == '?' ? 1 : kUnbounded;
      return true;
    }
    if (c != '{') return false;
    bool too_big = false;
    if (!Braces(lo, hi, &too_big)) return false;  // a literal '{'
    if (too_big) *lo = kUnbounded;
    return true;
  }

  std::string_view s_;
  RegexTarget target_;
  size_t pos_ = 0;
};

}  // namespace

Expr JsonChar(uint32_t cp) {
  switch (cp) {
    case '"':
      return Expr::Literal("\\\"");
    case '\\':
      return Expr::Literal("\\\\");
    case '\n':
      return Expr::Literal("\\n");
    case '\r':
      return Expr::Literal("\\r");
    case '\t':
      return Expr::Literal("\\t");
    case '\b':
      return Expr::Literal("\\b");
    case '\f':
      return Expr::Literal("\\f");
    default:
      break;
  }
  if (cp < 0x20) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    return Expr::Literal(buf);
  }
  return Expr::Char(cp);
}

Expr JsonClass(const std::vector<CharRange>& ranges, bool negated) {
  const std::vector<CharRange> pos = NormalizeClass(ranges, negated);
  // Raw: everything but controls, '"' and '\'; those become escapes.
  std::vector<CharRange> raw;
  std::vector<Expr> alts;
  std::vector<uint32_t> controls;
  for (CharRange r : pos) {
    for (uint32_t cp = r.lo; cp <= r.hi && cp < 0x20; ++cp) controls.push_back(cp);
    if (r.hi < 0x20) continue;
    const CharRange rest{std::max<uint32_t>(r.lo, 0x20), r.hi};
    uint32_t lo = rest.lo;
    for (uint32_t special : {uint32_t{'"'}, uint32_t{'\\'}}) {
      if (rest.lo <= special && special <= rest.hi) {
        alts.push_back(JsonChar(special));
        if (lo < special) raw.push_back({lo, special - 1});
        lo = special + 1;
      }
    }
    if (lo <= rest.hi) raw.push_back({lo, rest.hi});
  }
  if (controls.size() == 0x20) {
    // Every control character: the short escapes and \u0000-\u001F (either case).
    for (uint32_t cp :
         {uint32_t{'\b'}, uint32_t{'\f'}, uint32_t{'\n'}, uint32_t{'\r'}, uint32_t{'\t'}}) {
      alts.push_back(JsonChar(cp));
    }
    alts.push_back(Expr::Seq({Expr::Literal("\\u00"), Expr::Class({{'0', '1'}}),
                              Expr::Class({{'0', '9'}, {'a', 'f'}, {'A', 'F'}})}));
  } else {
    for (uint32_t cp : controls) alts.push_back(JsonChar(cp));
  }
  if (!raw.empty()) alts.insert(alts.begin(), Expr::Class(std::move(raw)));
  if (alts.empty()) return Expr::Class({});  // matches nothing
  return Expr::Alt(std::move(alts));
}

Result<Expr> RegexToExpr(std::string_view pattern, RegexTarget target) {
  return RegexParser(pattern, target).Parse();
}

Result<Grammar> RegexToGrammar(std::string_view pattern) {
  Grammar g;
  JISU_ASSIGN_OR_RETURN(uint32_t root, g.AddRule("root"));
  JISU_ASSIGN_OR_RETURN(Expr e, RegexToExpr(pattern, RegexTarget::kText));
  g.SetBody(root, std::move(e));
  g.set_root(root);
  return g;
}

}  // namespace jisu::grammar
