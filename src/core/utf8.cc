#include "core/utf8.h"

namespace jisu::utf8 {

Step Next(std::string_view s, size_t pos, char32_t* cp, size_t* len) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + pos;
  const size_t avail = s.size() - pos;
  const unsigned char b0 = p[0];
  if (b0 < 0x80) {
    *cp = b0;
    *len = 1;
    return Step::kValid;
  }
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  char32_t value;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
    value = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    value = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    value = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    *len = 1;
    return Step::kInvalid;
  }
  for (size_t i = 1; i < need; ++i) {
    if (i >= avail) {
      *len = avail;
      return Step::kIncomplete;
    }
    const unsigned char b = p[i];
    const unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (b < l || b > h) {
      *len = i;
      return Step::kInvalid;
    }
    value = (value << 6) | (b & 0x3F);
  }
  *cp = value;
  *len = need;
  return Step::kValid;
}

std::string Sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    char32_t cp;
    size_t len;
    const Step step = Next(s, pos, &cp, &len);
    if (step == Step::kValid) {
      out.append(s.data() + pos, len);
    } else {
      out.append(kReplacement);
    }
    pos += len;
  }
  return out;
}

bool IsValid(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    char32_t cp;
    size_t len;
    if (Next(s, pos, &cp, &len) != Step::kValid) return false;
    pos += len;
  }
  return true;
}

void Append(std::string* out, char32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t CountCodePoints(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace jisu::utf8
