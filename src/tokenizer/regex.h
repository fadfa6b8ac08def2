// A compiled PCRE2 pattern (UTF + UCP, JIT when available) used by pre-tokenizers, Replace
// normalizers/decoders and added-token word checks. Patterns are tokenizers' (Oniguruma's):
// \s is Unicode White_Space, which PCRE2's \s is not quite (it is rewritten). Matching is
// thread-safe: match data and the JIT stack are per thread. Subjects must be valid UTF-8.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "jisu/status.h"

namespace jisu {

class Regex {
 public:
  using Span = std::pair<size_t, size_t>;  // [begin, end) byte offsets

  static Result<std::unique_ptr<Regex>> Compile(std::string_view pattern);
  // Escapes `literal` so that it matches itself.
  static std::string Quote(std::string_view literal);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Successive non-overlapping matches, left to right. An empty match advances by one code
  // point. A matching error (resource limits) ends the search early.
  void FindAll(std::string_view subject, std::vector<Span>* out) const;
  // First match at or after `start`, if any.
  bool Find(std::string_view subject, size_t start, Span* match) const;

 private:
  Regex() = default;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
};

}  // namespace jisu
