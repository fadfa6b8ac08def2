// UTF-8 helpers (tokenizer, chat templates): decoding one code point with the Unicode "maximal
// subpart" rule for invalid input (what Python's errors="replace" and Rust's from_utf8_lossy do),
// lossy sanitizing, and encoding. Everything past Tokenizer::Encode's entry works on valid UTF-8
// only; Sanitize is what establishes that invariant.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace jisu::utf8 {

enum class Step {
  kValid,       // a complete, valid code point of `len` bytes
  kInvalid,     // `len` bytes (>= 1) form a maximal invalid subpart: one U+FFFD replaces them
  kIncomplete,  // the input ends inside a sequence that could still become valid; `len` bytes
};

// Examines the sequence starting at s[pos] (pos < s.size()).
Step Next(std::string_view s, size_t pos, char32_t* cp, size_t* len);

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Invalid sequences (and a truncated one at the end) become U+FFFD, one per maximal subpart.
std::string Sanitize(std::string_view s);
bool IsValid(std::string_view s);

void Append(std::string* out, char32_t cp);

// Number of code points in valid UTF-8.
size_t CountCodePoints(std::string_view s);

// Byte length of the code point whose first byte is `lead` (1 for a stray byte).
inline size_t SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

}  // namespace jisu::utf8
