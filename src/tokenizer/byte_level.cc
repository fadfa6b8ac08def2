#include "tokenizer/byte_level.h"

#include <array>

#include "core/utf8.h"

namespace jisu::byte_level {
namespace {

struct Tables {
  std::array<std::string, 256> spell;
  std::array<int, 324> byte_of;  // all mapped code points are < 0x144
  Tables() {
    byte_of.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t cp = printable ? static_cast<char32_t>(b) : 256 + extra++;
      utf8::Append(&spell[b], cp);
      byte_of[cp] = b;
    }
  }
};

const Tables& T() {
  static const Tables tables;
  return tables;
}

}  // namespace

const std::string& Spell(unsigned char b) { return T().spell[b]; }

void SpellBytes(std::string_view bytes, std::string* out) {
  const Tables& t = T();
  for (unsigned char b : bytes) out->append(t.spell[b]);
}

int ByteOf(char32_t cp) { return cp < 324 ? T().byte_of[cp] : -1; }

bool Unspell(std::string_view token, std::string* out) {
  std::string bytes;
  size_t pos = 0;
  while (pos < token.size()) {
    char32_t cp;
    size_t len;
    if (utf8::Next(token, pos, &cp, &len) != utf8::Step::kValid) return false;
    const int b = ByteOf(cp);
    if (b < 0) return false;
    bytes.push_back(static_cast<char>(b));
    pos += len;
  }
  out->append(bytes);
  return true;
}

bool IsSpelled(std::string_view s) {
  std::string ignored;
  return Unspell(s, &ignored);
}

}  // namespace jisu::byte_level
