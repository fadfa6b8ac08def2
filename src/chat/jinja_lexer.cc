#include "chat/jinja_lexer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "chat/jinja_value.h"

namespace jisu::jinja {

std::string NormalizeSource(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    char c = source[i];
    if (c == '\r') {
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      out.push_back('\n');
    } else {
      out.push_back(c);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

Status SyntaxErrorAt(const std::string& source, size_t pos, const std::string& msg) {
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < pos && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  size_t col = (pos >= line_start ? pos - line_start : 0) + 1;
  return Status::InvalidArgument("template syntax error at line " + std::to_string(line) +
                                 ", column " + std::to_string(col) + ": " + msg);
}

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

// Length in bytes of the Python-whitespace character at s[pos], or 0.
size_t SpaceLenAt(const std::string& s, size_t pos) {
  if (pos >= s.size()) return 0;
  size_t p = pos;
  uint32_t cp = DecodeUtf8(s, &p);
  return IsPySpace(cp) ? p - pos : 0;
}

size_t SkipSpaces(const std::string& s, size_t pos) {
  while (size_t n = SpaceLenAt(s, pos)) pos += n;
  return pos;
}

// str.rstrip() on Python whitespace.
std::string RStripPy(const std::string& text) {
  size_t end = 0;
  for (size_t p = 0; p < text.size();) {
    uint32_t cp = DecodeUtf8(text, &p);
    if (!IsPySpace(cp)) end = p;
  }
  return text.substr(0, end);
}

// Whether text[from:] is non-empty and all Python whitespace.
bool AllSpaces(const std::string& text, size_t from) {
  if (from >= text.size()) return false;
  for (size_t p = from; p < text.size();) {
    if (!IsPySpace(DecodeUtf8(text, &p))) return false;
  }
  return true;
}

class Lexer {
 public:
  explicit Lexer(const std::string& src) : src_(src) {}

  Result<std::vector<Token>> Run() {
    size_t pos = 0;
    bool line_starting = true;
    const size_t n = src_.size();
    while (pos < n) {
      size_t t = FindTagStart(pos);
      if (t == std::string::npos) {
        Emit(TokKind::kData, pos, src_.substr(pos));
        break;
      }
      std::string text = src_.substr(pos, t - pos);
      char type = src_[t + 1];
      size_t after = t + 2;
      char sign = (after < n && (src_[after] == '-' || src_[after] == '+')) ? src_[after] : 0;
      // {% raw %} ... {% endraw %}
      size_t raw_end = 0;
      bool is_raw = type == '%' && MatchRawBegin(after + (sign ? 1 : 0), &raw_end);
      if (sign == '-') {
        text = RStripPy(text);
      } else if (sign != '+' && type != '{') {
        text = LStripBlock(text, line_starting);
      }
      if (!text.empty()) Emit(TokKind::kData, pos, std::move(text));
      if (is_raw) {
        line_starting = src_[raw_end - 1] == '\n';
        JISU_RETURN_IF_ERROR(LexRaw(t, raw_end, line_starting, &pos));
        line_starting = pos > 0 && src_[pos - 1] == '\n';
        continue;
      }
      pos = after + (sign ? 1 : 0);
      if (type == '#') {
        JISU_RETURN_IF_ERROR(LexComment(t, &pos));
      } else {
        Emit(type == '{' ? TokKind::kVarBegin : TokKind::kBlockBegin, t, "");
        JISU_RETURN_IF_ERROR(LexTag(type, t, &pos));
      }
      line_starting = pos > 0 && src_[pos - 1] == '\n';
    }
    Emit(TokKind::kEof, n, "");
    return std::move(toks_);
  }

 private:
  void Emit(TokKind k, size_t pos, std::string text) {
    Token tok;
    tok.kind = k;
    tok.pos = pos;
    tok.text = std::move(text);
    toks_.push_back(std::move(tok));
  }

  size_t FindTagStart(size_t pos) const {
    for (size_t i = src_.find('{', pos); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  // lstrip_blocks: whitespace between the start of a line and a block or comment tag goes.
  static std::string LStripBlock(const std::string& text, bool line_starting) {
    size_t nl = text.rfind('\n');
    size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if ((l_pos > 0 || line_starting) && AllSpaces(text, l_pos)) return text.substr(0, l_pos);
    return text;
  }

  bool MatchWord(size_t pos, const char* word, size_t* end) const {
    size_t len = std::strlen(word);
    if (src_.compare(pos, len, word) != 0) return false;
    *end = pos + len;
    return true;
  }

  // `\s*raw\s*(-%}\s*|%})` after "{%" and the optional sign; *end is past the match.
  bool MatchRawBegin(size_t pos, size_t* end) const {
    size_t p = SkipSpaces(src_, pos);
    if (!MatchWord(p, "raw", &p)) return false;
    p = SkipSpaces(src_, p);
    if (MatchWord(p, "-%}", &p)) {
      *end = SkipSpaces(src_, p);
      return true;
    }
    if (MatchWord(p, "%}", &p)) {
      *end = p;
      return true;
    }
    return false;
  }

  Status LexRaw(size_t start, size_t body, bool line_starting, size_t* pos) {
    // Find the first `{%[-+]?\s*endraw\s*(+%}|-%}\s*|%}\n?)`.
    for (size_t i = src_.find("{%", body); i != std::string::npos; i = src_.find("{%", i + 1)) {
      size_t p = i + 2;
      char sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
      p = SkipSpaces(src_, p);
      if (!MatchWord(p, "endraw", &p)) continue;
      p = SkipSpaces(src_, p);
      size_t end;
      if (MatchWord(p, "+%}", &end)) {
      } else if (MatchWord(p, "-%}", &end)) {
        end = SkipSpaces(src_, end);
      } else if (MatchWord(p, "%}", &end)) {
        if (end < src_.size() && src_[end] == '\n') ++end;
      } else {
        continue;
      }
      std::string text = src_.substr(body, i - body);
      if (sign == '-') {
        text = RStripPy(text);
      } else if (sign != '+') {
        text = LStripBlock(text, line_starting);
      }
      if (!text.empty()) Emit(TokKind::kData, body, std::move(text));
      *pos = end;
      return Status::Ok();
    }
    return SyntaxErrorAt(src_, start, "missing end of raw directive");
  }

  Status LexComment(size_t start, size_t* pos) {
    size_t j = src_.find("#}", *pos);
    if (j == std::string::npos) return SyntaxErrorAt(src_, start, "missing end of comment tag");
    if (j > *pos && src_[j - 1] == '-') {
      *pos = SkipSpaces(src_, j + 2);
    } else if (j > *pos && src_[j - 1] == '+') {
      *pos = j + 2;
    } else {
      *pos = j + 2;
      if (*pos < src_.size() && src_[*pos] == '\n') ++*pos;
    }
    return Status::Ok();
  }

  // Tokens inside {{ ... }} (type '{') or {% ... %} (type '%') up to and including the end.
  Status LexTag(char type, size_t start, size_t* pos_io) {
    size_t p = *pos_io;
    const size_t n = src_.size();
    std::vector<char> balance;
    while (true) {
      if (p >= n) {
        return SyntaxErrorAt(src_, start,
                             type == '{' ? "unexpected end of template, expected '}}'"
                                         : "unexpected end of template, expected '%}'");
      }
      if (balance.empty()) {
        size_t end;
        if (type == '{') {
          if (MatchWord(p, "-}}", &end)) {
            Emit(TokKind::kVarEnd, p, "");
            *pos_io = SkipSpaces(src_, end);
            return Status::Ok();
          }
          if (MatchWord(p, "}}", &end)) {
            Emit(TokKind::kVarEnd, p, "");
            *pos_io = end;
            return Status::Ok();
          }
        } else {
          if (MatchWord(p, "+%}", &end)) {
            Emit(TokKind::kBlockEnd, p, "");
            *pos_io = end;
            return Status::Ok();
          }
          if (MatchWord(p, "-%}", &end)) {
            Emit(TokKind::kBlockEnd, p, "");
            *pos_io = SkipSpaces(src_, end);
            return Status::Ok();
          }
          if (MatchWord(p, "%}", &end)) {
            Emit(TokKind::kBlockEnd, p, "");
            if (end < n && src_[end] == '\n') ++end;
            *pos_io = end;
            return Status::Ok();
          }
        }
      }
      if (size_t sp = SpaceLenAt(src_, p)) {
        p += sp;
        continue;
      }
      char c = src_[p];
      if (IsDigit(c)) {
        JISU_RETURN_IF_ERROR(LexNumber(&p));
        continue;
      }
      if (IsAlpha(c)) {
        size_t b = p;
        while (p < n && (IsAlpha(src_[p]) || IsDigit(src_[p]))) ++p;
        Emit(TokKind::kName, b, src_.substr(b, p - b));
        continue;
      }
      if (c == '\'' || c == '"') {
        JISU_RETURN_IF_ERROR(LexString(&p));
        continue;
      }
      static const char* kOps2[] = {"//", "**", "==", "!=", ">=", "<="};
      bool matched = false;
      for (const char* op : kOps2) {
        if (src_.compare(p, 2, op) == 0) {
          Emit(TokKind::kOp, p, op);
          p += 2;
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (std::strchr("+-/*%~[](){}><=.:|,;", c) != nullptr && c != 0) {
        if (c == '(' || c == '[' || c == '{') {
          balance.push_back(c == '(' ? ')' : (c == '[' ? ']' : '}'));
        } else if (c == ')' || c == ']' || c == '}') {
          if (balance.empty()) return SyntaxErrorAt(src_, p, std::string("unexpected '") + c + "'");
          if (balance.back() != c) {
            return SyntaxErrorAt(
                src_, p, std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
          }
          balance.pop_back();
        }
        Emit(TokKind::kOp, p, std::string(1, c));
        ++p;
        continue;
      }
      return SyntaxErrorAt(src_, p, "unexpected char '" + std::string(1, c) + "'");
    }
  }

  // Digits with optional single '_' separators: `(\d+_)*\d+` / `[1-9](_?\d)*` forms.
  size_t ScanDigits(size_t p, bool (*ok)(char)) const {
    size_t n = src_.size();
    if (p >= n || !ok(src_[p])) return p;
    ++p;
    while (p < n) {
      if (ok(src_[p])) {
        ++p;
      } else if (src_[p] == '_' && p + 1 < n && ok(src_[p + 1])) {
        p += 2;
      } else {
        break;
      }
    }
    return p;
  }

  static bool Dec(char c) { return IsDigit(c); }
  static bool Bin(char c) { return c == '0' || c == '1'; }
  static bool Oct(char c) { return c >= '0' && c <= '7'; }
  static bool Hex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

  std::string Clean(size_t b, size_t e) const {
    std::string s;
    for (size_t i = b; i < e; ++i) {
      if (src_[i] != '_') s.push_back(src_[i]);
    }
    return s;
  }

  Status LexNumber(size_t* pp) {
    size_t b = *pp;
    size_t n = src_.size();
    // Float first: digits then (fraction? exponent | fraction), not preceded by '.'.
    if (b == 0 || src_[b - 1] != '.') {
      size_t p = ScanDigits(b, Dec);
      size_t frac_end = p;
      bool has_frac = false;
      if (p < n && src_[p] == '.' && p + 1 < n && IsDigit(src_[p + 1])) {
        frac_end = ScanDigits(p + 1, Dec);
        has_frac = true;
      }
      size_t exp_end = frac_end;
      bool has_exp = false;
      if (frac_end < n && (src_[frac_end] == 'e' || src_[frac_end] == 'E')) {
        size_t q = frac_end + 1;
        if (q < n && (src_[q] == '+' || src_[q] == '-')) ++q;
        if (q < n && IsDigit(src_[q])) {
          exp_end = ScanDigits(q, Dec);
          has_exp = true;
        }
      }
      if (has_exp || has_frac) {
        size_t e = has_exp ? exp_end : frac_end;
        std::string s = Clean(b, e);
        Token tok;
        tok.kind = TokKind::kFloat;
        tok.pos = b;
        tok.fval = std::strtod(s.c_str(), nullptr);
        toks_.push_back(std::move(tok));
        *pp = e;
        return Status::Ok();
      }
    }
    // Integers.
    int base = 10;
    size_t digits_begin = b, e;
    if (src_[b] == '0' && b + 1 < n &&
        (src_[b + 1] == 'b' || src_[b + 1] == 'B' || src_[b + 1] == 'o' || src_[b + 1] == 'O' ||
         src_[b + 1] == 'x' || src_[b + 1] == 'X')) {
      char k = static_cast<char>(src_[b + 1] | 0x20);
      bool (*ok)(char) = k == 'b' ? Bin : (k == 'o' ? Oct : Hex);
      base = k == 'b' ? 2 : (k == 'o' ? 8 : 16);
      size_t q = b + 2;
      if (q < n && src_[q] == '_') ++q;
      size_t end = ScanDigits(q, ok);
      if (end == q) {
        // Just "0" followed by a name.
        e = b + 1;
        base = 10;
      } else {
        digits_begin = b + 2;
        e = end;
      }
    } else if (src_[b] == '0') {
      // 0(_?0)*
      e = b + 1;
      while (e < n) {
        if (src_[e] == '0') {
          ++e;
        } else if (src_[e] == '_' && e + 1 < n && src_[e + 1] == '0') {
          e += 2;
        } else {
          break;
        }
      }
    } else {
      e = ScanDigits(b, Dec);
    }
    std::string s = Clean(digits_begin, e);
    errno = 0;
    char* endp = nullptr;
    unsigned long long v = std::strtoull(s.c_str(), &endp, base);
    if (errno == ERANGE || v > uint64_t(INT64_MAX)) {
      return SyntaxErrorAt(src_, b, "integer literal too large");
    }
    Token tok;
    tok.kind = TokKind::kInt;
    tok.pos = b;
    tok.ival = int64_t(v);
    toks_.push_back(std::move(tok));
    *pp = e;
    return Status::Ok();
  }

  static int HexVal(uint32_t c) {
    if (c >= '0' && c <= '9') return int(c - '0');
    if (c >= 'a' && c <= 'f') return int(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return int(c - 'A' + 10);
    return -1;
  }

  // Python string literal with unicode-escape decoding, as jinja2 applies it.
  Status LexString(size_t* pp) {
    size_t b = *pp;
    char q = src_[b];
    size_t p = b + 1;
    size_t n = src_.size();
    while (p < n && src_[p] != q) {
      if (src_[p] == '\\') ++p;
      ++p;
    }
    if (p >= n) return SyntaxErrorAt(src_, b, "unexpected char '" + std::string(1, q) + "'");
    std::vector<uint32_t> cps = ToCodePoints(std::string_view(src_).substr(b + 1, p - b - 1));
    *pp = p + 1;
    std::string out;
    for (size_t i = 0; i < cps.size(); ++i) {
      uint32_t c = cps[i];
      if (c != '\\') {
        AppendUtf8(c, &out);
        continue;
      }
      // The lexer regex guarantees a character follows a backslash.
      uint32_t e = cps[++i];
      auto hex_escape = [&](int len, const char* what) -> Status {
        uint32_t v = 0;
        for (int k = 0; k < len; ++k) {
          if (i + 1 + k >= cps.size() || HexVal(cps[i + 1 + k]) < 0) {
            return SyntaxErrorAt(src_, b, std::string("truncated ") + what + " escape");
          }
          v = v * 16 + uint32_t(HexVal(cps[i + 1 + k]));
        }
        if (v > 0x10FFFF) return SyntaxErrorAt(src_, b, "illegal Unicode character");
        i += size_t(len);
        AppendUtf8(v, &out);
        return Status::Ok();
      };
      switch (e) {
        case '\n':
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
          JISU_RETURN_IF_ERROR(hex_escape(2, "\\xXX"));
          break;
        case 'u':
          JISU_RETURN_IF_ERROR(hex_escape(4, "\\uXXXX"));
          break;
        case 'U':
          JISU_RETURN_IF_ERROR(hex_escape(8, "\\UXXXXXXXX"));
          break;
        case 'N':
          return SyntaxErrorAt(src_, b, "\\N{...} escapes are not supported");
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = e - '0';
            for (int k = 0; k < 2 && i + 1 < cps.size() && cps[i + 1] >= '0' && cps[i + 1] <= '7';
                 ++k) {
              v = v * 8 + (cps[++i] - '0');
            }
            AppendUtf8(v, &out);
          } else if (e >= 0x80) {
            // jinja2 first writes non-ASCII characters as backslash escapes, so a backslash
            // before one escapes that escape's own backslash.
            char buf[16];
            if (e < 0x100) {
              std::snprintf(buf, sizeof(buf), "\\x%02x", e);
            } else if (e < 0x10000) {
              std::snprintf(buf, sizeof(buf), "\\u%04x", e);
            } else {
              std::snprintf(buf, sizeof(buf), "\\U%08x", e);
            }
            out += buf;
          } else {
            out += '\\';
            AppendUtf8(e, &out);
          }
      }
    }
    Token tok;
    tok.kind = TokKind::kString;
    tok.pos = b;
    tok.text = std::move(out);
    toks_.push_back(std::move(tok));
    return Status::Ok();
  }

  const std::string& src_;
  std::vector<Token> toks_;
};

}  // namespace

Result<std::vector<Token>> Tokenize(const std::string& source) { return Lexer(source).Run(); }

}  // namespace jisu::jinja
