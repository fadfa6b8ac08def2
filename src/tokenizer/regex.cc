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

}  // namespace

Result<std::unique_ptr<Regex>> Regex::Compile(std::string_view pattern) {
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
