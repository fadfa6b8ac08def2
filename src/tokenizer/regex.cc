#include "tokenizer/regex.h"

#include <pcre2.h>

#include <string>

#include "core/utf8.h"

namespace jisu {
namespace {

// Limits keep a hostile pattern from running away on long text.
constexpr uint32_t kMatchLimit = 50'000'000;
constexpr uint32_t kDepthLimit = 100'000;

struct ThreadMatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  ThreadMatchState() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
    if (context != nullptr) {
      pcre2_set_match_limit(context, kMatchLimit);
      pcre2_set_depth_limit(context, kDepthLimit);
      if (jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
    }
  }
  ~ThreadMatchState() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
  }
};

ThreadMatchState& State() {
  thread_local ThreadMatchState state;
  return state;
}

// Unicode White_Space: Oniguruma's \s, which tokenizers' patterns are written for. PCRE2's
// \s also takes U+180E (a format character since Unicode 6.3). \v (LF, VT, FF, CR, NEL,
// U+2028, U+2029) comes last so that a '-' after the spelled-out \s in a class stays literal,
// as it is after \s.
constexpr std::string_view kWhiteSpace =
    "\\t\\x20\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{202F}\\x{205F}\\x{3000}\\v";

// Spells out \s (and \S outside a character class) as kWhiteSpace; \Q...\E quotes and POSIX
// classes are copied through.
std::string WithOnigurumaSpaces(std::string_view p) {
  std::string out;
  out.reserve(p.size());
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (e == 'Q') {
        const size_t end = p.find("\\E", i + 2);
        const size_t stop = end == std::string_view::npos ? p.size() : end + 2;
        out.append(p.substr(i, stop - i));
        i = stop - 1;
      } else if (e == 's') {
        if (!in_class) out += '[';
        out.append(kWhiteSpace);
        if (!in_class) out += ']';
        ++i;
      } else if (e == 'S' && !in_class) {
        out.append("[^").append(kWhiteSpace).append("]");
        ++i;
      } else {
        out.append(p.substr(i, 2));
        ++i;
      }
      continue;
    }
    if (in_class) {
      if (c == '[' && i + 1 < p.size() && (p[i + 1] == ':' || p[i + 1] == '.' || p[i + 1] == '=')) {
        const size_t end = p.find(std::string{p[i + 1], ']'}, i + 2);
        if (end != std::string_view::npos) {
          out.append(p.substr(i, end + 2 - i));
          i = end + 1;
          continue;
        }
      }
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    out += c;
    if (c == '[') {
      in_class = true;
      // A ']' first in the class, after an optional '^', is a literal.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
    }
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Regex>> Regex::Compile(std::string_view source) {
  const std::string pattern = WithOnigurumaSpaces(source);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(error, buffer, sizeof(buffer));
    return Status::InvalidArgument("bad regex at offset " + std::to_string(offset) + ": " +
                                   reinterpret_cast<const char*>(buffer));
  }
  std::unique_ptr<Regex> regex(new Regex());
  regex->code_ = code;
  regex->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return regex;
}

std::string Regex::Quote(std::string_view literal) {
  // \Q...\E quoting, with any "\E" inside split so it stays literal.
  std::string out = "\\Q";
  for (size_t i = 0; i < literal.size(); ++i) {
    if (literal[i] == '\\' && i + 1 < literal.size() && literal[i + 1] == 'E') {
      out += "\\E\\\\\\Q";
      continue;
    }
    out += literal[i];
  }
  out += "\\E";
  return out;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

bool Regex::Find(std::string_view subject, size_t start, Span* match) const {
  ThreadMatchState& st = State();
  if (st.data == nullptr) return false;
  const int rc =
      pcre2_match(static_cast<pcre2_code*>(code_), reinterpret_cast<PCRE2_SPTR>(subject.data()),
                  subject.size(), start, 0, st.data, st.context);
  if (rc < 0) return false;
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
  if (ov[0] > ov[1] || ov[1] > subject.size()) return false;  // \K tricks
  *match = {ov[0], ov[1]};
  return true;
}

void Regex::FindAll(std::string_view subject, std::vector<Span>* out) const {
  ThreadMatchState& st = State();
  if (st.data == nullptr) return;
  auto* code = static_cast<pcre2_code*>(code_);
  size_t start = 0;
  uint32_t options = 0;  // the first call validates the UTF-8 of the whole subject
  while (start <= subject.size()) {
    const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(),
                               start, options, st.data, st.context);
    if (rc < 0) return;  // no match, or a limit / bad UTF-8: stop
    options = PCRE2_NO_UTF_CHECK;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    const size_t b = ov[0], e = ov[1];
    if (b > e || e > subject.size() || b < start) return;  // \K games
    out->emplace_back(b, e);
    if (e == b) {
      if (e >= subject.size()) return;
      start = e + utf8::SequenceLength(static_cast<unsigned char>(subject[e]));
    } else {
      start = e;
    }
  }
}

}  // namespace jisu
