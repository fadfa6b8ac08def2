#include "grammar/gbnf_parser.h"

#include <map>

#include "core/utf8.h"

namespace jisu::grammar {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : s_(text) {}

  Result<Grammar> Parse() {
    if (s_.size() > kMaxGbnfBytes) {
      return Status::InvalidArgument("the grammar is larger than " + std::to_string(kMaxGbnfBytes) +
                                     " bytes");
    }
    if (!utf8::IsValid(s_)) return Status::InvalidArgument("the grammar is not valid UTF-8");
    SkipSpace(true);
    while (pos_ < s_.size()) {
      JISU_RETURN_IF_ERROR(ParseRule());
      SkipSpace(true);
    }
    for (auto& [name, info] : names_) {
      if (!info.defined)
        return ErrorAt(info.first_use, "rule '" + name + "' is used but not defined");
    }
    const int64_t root = g_.Find("root");
    if (root < 0) return Status::InvalidArgument("GBNF: the grammar has no 'root' rule");
    g_.set_root(static_cast<uint32_t>(root));
    return std::move(g_);
  }

 private:
  struct NameInfo {
    uint32_t id = 0;
    bool defined = false;
    size_t first_use = 0;
  };

  Status ErrorAt(size_t at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else if ((static_cast<unsigned char>(s_[i]) & 0xC0) != 0x80) {
        ++col;
      }
    }
    return Status::InvalidArgument("GBNF line " + std::to_string(line) + ", column " +
                                   std::to_string(col) + ": " + what);
  }
  Status Error(const std::string& what) const { return ErrorAt(pos_, what); }

  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }

  // Spaces, tabs and comments; newlines too when newline_ok.
  void SkipSpace(bool newline_ok) {
    while (!AtEnd()) {
      const char c = Peek();
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!AtEnd() && Peek() != '\n' && Peek() != '\r') ++pos_;
      } else if (newline_ok && (c == '\n' || c == '\r')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view ParseName() {
    const size_t start = pos_;
    while (!AtEnd() && IsNameChar(Peek())) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  Result<uint32_t> RuleId(std::string_view name, size_t at) {
    auto it = names_.find(std::string(name));
    if (it != names_.end()) return it->second.id;
    auto id = g_.AddRule(std::string(name));
    if (!id.ok()) return ErrorAt(at, id.status().message());
    names_[std::string(name)] = NameInfo{*id, false, at};
    return *id;
  }

  Status ParseRule() {
    const size_t at = pos_;
    const std::string_view name = ParseName();
    if (name.empty()) return Error("expected a rule name");
    SkipSpace(false);
    if (s_.substr(pos_, 3) != "::=") return Error("expected '::=' after the rule name");
    pos_ += 3;
    SkipSpace(true);
    JISU_ASSIGN_OR_RETURN(uint32_t id, RuleId(name, at));
    NameInfo& info = names_[std::string(name)];
    if (info.defined) return ErrorAt(at, "rule '" + std::string(name) + "' is defined twice");
    info.defined = true;
    JISU_ASSIGN_OR_RETURN(Expr body, ParseAlternatives(0));
    g_.SetBody(id, std::move(body));
    SkipSpace(false);
    if (!AtEnd() && Peek() != '\n' && Peek() != '\r') {
      return Error(std::string("unexpected '") + Peek() + "' (a rule ends at the end of its line)");
    }
    return Status::Ok();
  }

  Result<Expr> ParseAlternatives(int depth) {
    if (depth > kMaxGbnfNesting) {
      return Error("groups are nested deeper than " + std::to_string(kMaxGbnfNesting));
    }
    std::vector<Expr> alts;
    JISU_ASSIGN_OR_RETURN(Expr first, ParseSequence(depth));
    alts.push_back(std::move(first));
    for (;;) {
      // An alternative may continue on the next line when that line starts with '|'.
      const size_t save = pos_;
      SkipSpace(true);
      if (Peek() != '|') {
        pos_ = save;
        break;
      }
      ++pos_;
      SkipSpace(true);
      JISU_ASSIGN_OR_RETURN(Expr next, ParseSequence(depth));
      alts.push_back(std::move(next));
    }
    return Expr::Alt(std::move(alts));
  }

  Result<Expr> ParseSequence(int depth) {
    std::vector<Expr> items;
    const bool nested = depth > 0;
    while (!AtEnd()) {
      const char c = Peek();
      if (c == '|' || c == ')' || c == '\n' || c == '\r') break;
      JISU_ASSIGN_OR_RETURN(Expr term, ParseTerm(depth));
      JISU_ASSIGN_OR_RETURN(term, ParsePostfix(std::move(term)));
      items.push_back(std::move(term));
      SkipSpace(nested);
    }
    return Expr::Seq(std::move(items));
  }

  Result<Expr> ParseTerm(int depth) {
    const char c = Peek();
    if (c == '"') return ParseLiteral();
    if (c == '[') return ParseClass();
    if (c == '.') {
      ++pos_;
      return Expr::AnyChar();
    }
    if (c == '(') {
      ++pos_;
      SkipSpace(true);
      JISU_ASSIGN_OR_RETURN(Expr inner, ParseAlternatives(depth + 1));
      SkipSpace(true);
      if (Peek() != ')') return Error("expected ')'");
      ++pos_;
      return inner;
    }
    if (IsNameChar(c)) {
      const size_t at = pos_;
      const std::string_view name = ParseName();
      SkipSpace(false);
      if (s_.substr(pos_, 3) == "::=") {
        return ErrorAt(at, "expected a newline before the rule '" + std::string(name) + "'");
      }
      JISU_ASSIGN_OR_RETURN(uint32_t id, RuleId(name, at));
      return Expr::Ref(id);
    }
    if (c == '<') return Error("token references (<...>) are not supported");
    return Error(std::string("unexpected '") + c + "'");
  }

  // One code point at pos_, escapes decoded.
  Result<uint32_t> ParseChar() {
    if (AtEnd()) return Error("unexpected end of the grammar");
    if (Peek() == '\\') {
      const size_t at = pos_;
      ++pos_;
      if (AtEnd()) return Error("unexpected end after '\\'");
      const char e = s_[pos_++];
      switch (e) {
        case 'n':
          return uint32_t{'\n'};
        case 'r':
          return uint32_t{'\r'};
        case 't':
          return uint32_t{'\t'};
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '\'':
          return uint32_t(static_cast<unsigned char>(e));
        case 'x':
          return ParseHex(2, at);
        case 'u':
          return ParseHex(4, at);
        case 'U':
          return ParseHex(8, at);
        default:
          return ErrorAt(at, std::string("unknown escape '\\") + e + "'");
      }
    }
    char32_t cp;
    size_t len;
    utf8::Next(s_, pos_, &cp, &len);  // the text was checked to be valid UTF-8
    pos_ += len;
    return static_cast<uint32_t>(cp);
  }

  // `at`: the escape's backslash, for the error.
  Result<uint32_t> ParseHex(int digits, size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = HexValue(Peek());
      if (h < 0) return Error("expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) {
      return ErrorAt(at, "escape is not a Unicode scalar value");
    }
    return v;
  }

  Result<Expr> ParseLiteral() {
    ++pos_;  // "
    std::string bytes;
    while (!AtEnd() && Peek() != '"') {
      if (Peek() == '\n' || Peek() == '\r') return Error("newline inside a literal");
      JISU_ASSIGN_OR_RETURN(uint32_t cp, ParseChar());
      utf8::Append(&bytes, static_cast<char32_t>(cp));
    }
    if (AtEnd()) return Error("unterminated literal");
    ++pos_;
    return Expr::Literal(bytes);
  }

  Result<Expr> ParseClass() {
    ++pos_;  // [
    bool negated = false;
    if (Peek() == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<CharRange> ranges;
    while (!AtEnd() && Peek() != ']') {
      if (Peek() == '\n' || Peek() == '\r') return Error("newline inside a character class");
      JISU_ASSIGN_OR_RETURN(uint32_t lo, ParseChar());
      uint32_t hi = lo;
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != '\n' && Peek(1) != '\r' &&
          pos_ + 1 < s_.size()) {
        ++pos_;
        const size_t at = pos_;
        JISU_ASSIGN_OR_RETURN(hi, ParseChar());
        if (hi < lo) return ErrorAt(at, "character range is out of order");
      }
      ranges.push_back({lo, hi});
    }
    if (AtEnd()) return Error("unterminated character class");
    ++pos_;
    return Expr::Class(std::move(ranges), negated);
  }

  Result<uint32_t> ParseCount() {
    const size_t start = pos_;
    uint64_t v = 0;
    while (Peek() >= '0' && Peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(Peek() - '0');
      if (v > Grammar::kMaxRepeat) {
        return ErrorAt(start, "repetition count above " + std::to_string(Grammar::kMaxRepeat));
      }
      ++pos_;
    }
    if (pos_ == start) return Error("expected a number");
    return static_cast<uint32_t>(v);
  }

  Result<Expr> ParsePostfix(Expr term) {
    for (;;) {
      const char c = Peek();
      if (c == '*') {
        ++pos_;
        term = Expr::Star(std::move(term));
      } else if (c == '+') {
        ++pos_;
        term = Expr::Plus(std::move(term));
      } else if (c == '?') {
        ++pos_;
        term = Expr::Optional(std::move(term));
      } else if (c == '{') {
        ++pos_;
        SkipSpace(false);
        JISU_ASSIGN_OR_RETURN(uint32_t lo, ParseCount());
        SkipSpace(false);
        uint32_t hi = lo;
        if (Peek() == ',') {
          ++pos_;
          SkipSpace(false);
          if (Peek() == '}') {
            hi = kUnbounded;
          } else {
            JISU_ASSIGN_OR_RETURN(hi, ParseCount());
            SkipSpace(false);
          }
        }
        if (Peek() != '}') return Error("expected '}'");
        ++pos_;
        if (hi < lo) return Error("repetition {m,n} needs m <= n");
        term = Expr::Repeat(std::move(term), lo, hi);
      } else {
        return term;
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  Grammar g_;
  std::map<std::string, NameInfo> names_;
};

}  // namespace

Result<Grammar> ParseGbnf(std::string_view text) { return GbnfParser(text).Parse(); }

}  // namespace jisu::grammar
