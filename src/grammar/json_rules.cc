#include "grammar/json_rules.h"

#include <algorithm>
#include <map>

#include "core/utf8.h"
#include "grammar/regex_to_grammar.h"

namespace jisu::grammar {
namespace {

Expr Lit(std::string_view s) { return Expr::Literal(s); }
Expr Cls(std::vector<CharRange> r) { return Expr::Class(std::move(r)); }
Expr Digit() { return Cls({{'0', '9'}}); }
Expr Hex() { return Cls({{'0', '9'}, {'A', 'F'}, {'a', 'f'}}); }

constexpr int kMaxIntDigits = 16;

// Decimal strings of the integers in [lo, hi]; lo and hi have the same number of digits.
Expr DigitRange(const std::string& lo, const std::string& hi) {
  if (lo.empty()) return Expr::Empty();
  if (lo == hi) return Lit(lo);
  if (lo[0] == hi[0])
    return Expr::Seq({Lit(lo.substr(0, 1)), DigitRange(lo.substr(1), hi.substr(1))});
  const size_t n = lo.size();
  const bool lo_rest_zero = lo.find_first_not_of('0', 1) == std::string::npos;
  const bool hi_rest_nine = hi.find_first_not_of('9', 1) == std::string::npos;
  std::vector<Expr> alts;
  if (!lo_rest_zero) {
    alts.push_back(
        Expr::Seq({Lit(lo.substr(0, 1)), DigitRange(lo.substr(1), std::string(n - 1, '9'))}));
  }
  const char a = static_cast<char>(lo[0] + (lo_rest_zero ? 0 : 1));
  const char b = static_cast<char>(hi[0] - (hi_rest_nine ? 0 : 1));
  if (a <= b) {
    alts.push_back(Expr::Seq(
        {Cls({{static_cast<uint32_t>(a), static_cast<uint32_t>(b)}}),
         Expr::Repeat(Digit(), static_cast<uint32_t>(n - 1), static_cast<uint32_t>(n - 1))}));
  }
  if (!hi_rest_nine) {
    alts.push_back(
        Expr::Seq({Lit(hi.substr(0, 1)), DigitRange(std::string(n - 1, '0'), hi.substr(1))}));
  }
  return Expr::Alt(std::move(alts));
}

int64_t Pow10(int n) {
  int64_t v = 1;
  while (n-- > 0) v *= 10;
  return v;
}

// Integers in [lo, hi] (hi absent: up to kMaxIntDigits digits), 0 <= lo, without leading zeros.
Expr NonNegativeRange(int64_t lo, std::optional<int64_t> hi) {
  const int nlo = static_cast<int>(std::to_string(lo).size());
  std::vector<Expr> alts;
  if (hi) {
    const int nhi = static_cast<int>(std::to_string(*hi).size());
    for (int n = nlo; n <= nhi; ++n) {
      const int64_t a = std::max(lo, n == 1 ? int64_t{0} : Pow10(n - 1));
      const int64_t b = std::min(*hi, Pow10(n) - 1);
      if (a <= b) alts.push_back(DigitRange(std::to_string(a), std::to_string(b)));
    }
  } else {
    alts.push_back(DigitRange(std::to_string(lo), std::string(static_cast<size_t>(nlo), '9')));
    if (nlo < kMaxIntDigits) {
      alts.push_back(
          Expr::Seq({Cls({{'1', '9'}}), Expr::Repeat(Digit(), static_cast<uint32_t>(nlo),
                                                     static_cast<uint32_t>(kMaxIntDigits - 1))}));
    }
  }
  return Expr::Alt(std::move(alts));
}

// Non-negative numbers in [lo, hi] (integer bounds), no exponent.
Expr NonNegativeNumber(int64_t lo, std::optional<int64_t> hi) {
  const Expr frac = Expr::Optional(Expr::Seq({Lit("."), Expr::Repeat(Digit(), 1, 15)}));
  if (!hi) return Expr::Seq({NonNegativeRange(lo, std::nullopt), frac});
  std::vector<Expr> alts;
  if (lo <= *hi - 1) alts.push_back(Expr::Seq({NonNegativeRange(lo, *hi - 1), frac}));
  alts.push_back(Expr::Seq({Lit(std::to_string(*hi)),
                            Expr::Optional(Expr::Seq({Lit("."), Expr::Repeat(Lit("0"), 1, 15)}))}));
  return Expr::Alt(std::move(alts));
}

Status CheckBounds(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  for (auto b : {lo, hi}) {
    if (b && (*b > JsonRules::kMaxBound || *b < -JsonRules::kMaxBound)) {
      return Status::InvalidArgument("minimum/maximum beyond +-10^15 are not supported");
    }
  }
  if (lo && hi && *lo > *hi) return Status::InvalidArgument("minimum is above maximum");
  return Status::Ok();
}

// RFC 3339 pieces. Days are limited to those every month of every year has (Feb 29 is left
// out: no leap-year arithmetic in a grammar), so each date generated is a real date.
constexpr const char* kDate =
    "[0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|"
    "02-(0[1-9]|1[0-9]|2[0-8]))";
constexpr const char* kTime =
    "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";

}  // namespace

Result<Expr> JsonRules::Lazy(const char* name, const std::function<Result<Expr>()>& body) {
  const int64_t found = g_->Find(name);
  if (found >= 0) return Expr::Ref(static_cast<uint32_t>(found));
  JISU_ASSIGN_OR_RETURN(uint32_t id, g_->AddRule(name));
  JISU_ASSIGN_OR_RETURN(Expr e, body());
  g_->SetBody(id, std::move(e));
  return Expr::Ref(id);
}

Result<Expr> JsonRules::Ws() {
  return Lazy("ws", [] {
    return Result<Expr>(Expr::Optional(Expr::Alt(
        {Lit(" "), Expr::Seq({Lit("\n"), Expr::Repeat(Cls({{' ', ' '}, {'\t', '\t'}}), 0, 20)})})));
  });
}

Result<Expr> JsonRules::Char() {
  return Lazy("char", [] {
    // \u escapes of surrogates are left out: a lone one is not a character, and a pair would
    // count as two here but one for a validator.
    Expr hex4 = Expr::Alt(
        {Expr::Seq({Cls({{'0', '9'}, {'A', 'C'}, {'a', 'c'}}), Expr::Repeat(Hex(), 3, 3)}),
         Expr::Seq({Cls({{'D', 'D'}, {'d', 'd'}}), Cls({{'0', '7'}}), Expr::Repeat(Hex(), 2, 2)}),
         Expr::Seq({Cls({{'E', 'F'}, {'e', 'f'}}), Expr::Repeat(Hex(), 3, 3)})});
    Expr escape = Expr::Seq({Lit("\\"), Expr::Alt({Cls({{'"', '"'},
                                                        {'\\', '\\'},
                                                        {'/', '/'},
                                                        {'b', 'b'},
                                                        {'f', 'f'},
                                                        {'n', 'n'},
                                                        {'r', 'r'},
                                                        {'t', 't'}}),
                                                   Expr::Seq({Lit("u"), std::move(hex4)})})});
    return Result<Expr>(Expr::Alt(
        {Expr::Class({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, /*negated=*/true), std::move(escape)}));
  });
}

Result<Expr> JsonRules::String() {
  return Lazy("string", [this]() -> Result<Expr> {
    JISU_ASSIGN_OR_RETURN(Expr c, Char());
    return Expr::Seq({Lit("\""), Expr::Star(std::move(c)), Lit("\"")});
  });
}

Result<Expr> JsonRules::Integer() {
  return Lazy("integer", [] {
    return Result<Expr>(Expr::Seq({Expr::Optional(Lit("-")), NonNegativeRange(0, std::nullopt)}));
  });
}

Result<Expr> JsonRules::Number() {
  return Lazy("number", [] {
    return Result<Expr>(
        Expr::Seq({Expr::Optional(Lit("-")), NonNegativeRange(0, std::nullopt),
                   Expr::Optional(Expr::Seq({Lit("."), Expr::Repeat(Digit(), 1, 15)})),
                   Expr::Optional(Expr::Seq({Cls({{'E', 'E'}, {'e', 'e'}}),
                                             Expr::Optional(Cls({{'+', '+'}, {'-', '-'}})),
                                             Expr::Repeat(Digit(), 1, 2)}))}));
  });
}

Result<Expr> JsonRules::Boolean() {
  return Lazy("boolean", [] { return Result<Expr>(Expr::Alt({Lit("true"), Lit("false")})); });
}

Result<Expr> JsonRules::Null() {
  return Lazy("null", [] { return Result<Expr>(Lit("null")); });
}

Result<Expr> JsonRules::Value() {
  return Lazy("value", [this]() -> Result<Expr> {
    JISU_ASSIGN_OR_RETURN(Expr o, Object());
    JISU_ASSIGN_OR_RETURN(Expr a, Array());
    JISU_ASSIGN_OR_RETURN(Expr s, String());
    JISU_ASSIGN_OR_RETURN(Expr n, Number());
    JISU_ASSIGN_OR_RETURN(Expr b, Boolean());
    JISU_ASSIGN_OR_RETURN(Expr z, Null());
    return Expr::Alt({o, a, s, n, b, z});
  });
}

Result<Expr> JsonRules::Object() {
  return Lazy("object", [this]() -> Result<Expr> {
    JISU_ASSIGN_OR_RETURN(Expr ws, Ws());
    JISU_ASSIGN_OR_RETURN(Expr s, String());
    JISU_ASSIGN_OR_RETURN(Expr v, Value());
    Expr member = Expr::Seq({s, ws, Lit(":"), ws, v});
    Expr more = Expr::Star(Expr::Seq({ws, Lit(","), ws, member}));
    return Expr::Seq({Lit("{"), ws, Expr::Optional(Expr::Seq({member, more, ws})), Lit("}")});
  });
}

Result<Expr> JsonRules::Array() {
  return Lazy("array", [this]() -> Result<Expr> {
    JISU_ASSIGN_OR_RETURN(Expr ws, Ws());
    JISU_ASSIGN_OR_RETURN(Expr v, Value());
    Expr more = Expr::Star(Expr::Seq({ws, Lit(","), ws, v}));
    return Expr::Seq({Lit("["), ws, Expr::Optional(Expr::Seq({v, more, ws})), Lit("]")});
  });
}

Result<Expr> JsonRules::IntegerRange(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  JISU_RETURN_IF_ERROR(CheckBounds(lo, hi));
  std::vector<Expr> alts;
  if (!lo || *lo < 0) {  // negative: magnitudes m with -m >= lo and -m <= hi
    const int64_t mlo = hi && *hi < 0 ? -*hi : 1;
    const std::optional<int64_t> mhi = lo ? std::optional<int64_t>(-*lo) : std::nullopt;
    if (!mhi || mlo <= *mhi) alts.push_back(Expr::Seq({Lit("-"), NonNegativeRange(mlo, mhi)}));
  }
  if (!hi || *hi >= 0) alts.push_back(NonNegativeRange(lo ? std::max<int64_t>(*lo, 0) : 0, hi));
  return Expr::Alt(std::move(alts));
}

Result<Expr> JsonRules::NumberRange(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  JISU_RETURN_IF_ERROR(CheckBounds(lo, hi));
  std::vector<Expr> alts;
  if (!lo) {
    alts.push_back(
        Expr::Seq({Lit("-"), NonNegativeNumber(hi && *hi < 0 ? -*hi : 0, std::nullopt)}));
  } else if (*lo < 0) {
    alts.push_back(Expr::Seq({Lit("-"), NonNegativeNumber(hi && *hi < 0 ? -*hi : 0, -*lo)}));
  }
  if (!hi || *hi >= 0) alts.push_back(NonNegativeNumber(lo ? std::max<int64_t>(*lo, 0) : 0, hi));
  return Expr::Alt(std::move(alts));
}

Result<Expr> JsonRules::StringOfLength(uint32_t min, uint32_t max) {
  if (min > Grammar::kMaxRepeat || (max != kUnbounded && max > Grammar::kMaxRepeat)) {
    return Status::InvalidArgument("minLength/maxLength above " +
                                   std::to_string(Grammar::kMaxRepeat) + " are not supported");
  }
  JISU_ASSIGN_OR_RETURN(Expr c, Char());
  return Expr::Seq({Lit("\""), Expr::Repeat(std::move(c), min, max), Lit("\"")});
}

Result<Expr> JsonRules::StringFormat(std::string_view format) {
  std::string pattern;
  if (format == "date") {
    pattern = std::string("^") + kDate + "$";
  } else if (format == "time") {
    pattern = std::string("^") + kTime + "$";
  } else if (format == "date-time") {
    pattern = std::string("^") + kDate + "T" + kTime + "$";
  } else if (format == "uuid") {
    pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
  } else if (format == "email") {
    pattern =
        "^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(\\.[A-Za-z0-9-]{1,63}){0,3}\\.[A-Za-z]{2,24}$";
  } else if (format == "ipv4") {
    pattern =
        "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-"
        "9]?[0-9])$";
  } else {
    return Status::InvalidArgument("format '" + std::string(format) +
                                   "' is not supported (date, time, date-time, uuid, email, ipv4)");
  }
  return StringPattern(pattern);
}

Result<Expr> JsonRules::StringPattern(std::string_view pattern) {
  JISU_ASSIGN_OR_RETURN(Expr body, RegexToExpr(pattern, RegexTarget::kJsonString));
  return Expr::Seq({Lit("\""), std::move(body), Lit("\"")});
}

Result<Expr> JsonRules::KeyNotIn(const std::vector<std::string>& keys, std::string_view base) {
  if (keys.empty()) return String();
  // A trie over the keys' code points; node i's rule: the rest of a key that is not a key.
  struct Node {
    bool terminal = false;
    std::map<uint32_t, size_t> children;
  };
  std::vector<Node> trie(1);
  for (const std::string& k : keys) {
    size_t node = 0, pos = 0;
    while (pos < k.size()) {
      char32_t cp;
      size_t len;
      if (utf8::Next(k, pos, &cp, &len) != utf8::Step::kValid) break;
      pos += len;
      auto it = trie[node].children.find(cp);
      if (it == trie[node].children.end()) {
        trie[node].children[cp] = trie.size();
        trie.emplace_back();
        node = trie.size() - 1;
      } else {
        node = it->second;
      }
    }
    trie[node].terminal = true;
  }
  // Raw characters: no controls, '"' or '\'.
  const std::vector<CharRange> raw_excluded = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
  Expr raw_char = Expr::Class(raw_excluded, /*negated=*/true);
  std::vector<uint32_t> ids(trie.size());
  for (size_t i = 0; i < trie.size(); ++i) {
    JISU_ASSIGN_OR_RETURN(ids[i], g_->AddUniqueRule(std::string(base) + "-key"));
  }
  for (size_t i = 0; i < trie.size(); ++i) {
    std::vector<Expr> alts;
    if (!trie[i].terminal) alts.push_back(Expr::Empty());
    std::vector<CharRange> other = raw_excluded;
    for (auto& [cp, child] : trie[i].children) {
      alts.push_back(Expr::Seq({Expr::Char(cp), Expr::Ref(ids[child])}));
      other.push_back({cp, cp});
    }
    alts.push_back(Expr::Seq({Expr::Class(other, /*negated=*/true), Expr::Star(raw_char)}));
    g_->SetBody(ids[i], Expr::Alt(std::move(alts)));
  }
  return Expr::Seq({Lit("\""), Expr::Ref(ids[0]), Lit("\"")});
}

}  // namespace jisu::grammar
