// Python str semantics on UTF-8 strings (see jinja_strings.h), less the formatting: code point
// case mapping and the case predicates, upper/lower/capitalize/title/swapcase, and
// strip/split/rsplit/splitlines/replace/find/count/center. printf-style % and str.format are
// in jinja_strings_format.cc.
#include "chat/jinja_strings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace jisu::jinja {

// ---- case mapping

uint32_t UpperCp(uint32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (c == 0xB5) return 0x39C;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return (c & 1) ? c - 1 : c;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c : c - 1;
    return c;
  }
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF)) return (c & 1) ? c - 1 : c;
  if (c >= 0x561 && c <= 0x586) return c - 48;
  if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
  return c;
}

uint32_t LowerCp(uint32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x130) return 'i';
    if (c == 0x178) return 0xFF;
    if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return (c & 1) ? c : c + 1;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : c;
    return c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF)) return (c & 1) ? c : c + 1;
  if (c >= 0x531 && c <= 0x556) return c + 48;
  if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
  return c;
}

bool IsCased(uint32_t c) { return c == 0xDF || UpperCp(c) != c || LowerCp(c) != c; }
bool IsUpperCp(uint32_t c) { return LowerCp(c) != c; }
bool IsLowerCp(uint32_t c) { return c == 0xDF || UpperCp(c) != c; }

bool IsAlnumCp(uint32_t c) {
  if (c < 0x80) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }
  if (IsPySpace(c)) return false;
  // General punctuation, symbols and CJK punctuation are not alphanumeric.
  if ((c >= 0x80 && c <= 0xBF && c != 0xAA && c != 0xB5 && c != 0xBA) || c == 0xD7 || c == 0xF7 ||
      (c >= 0x2000 && c <= 0x2BFF) || (c >= 0x3000 && c <= 0x303F) ||
      (c >= 0xFF00 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) ||
      (c >= 0x1F000 && c <= 0x1FAFF)) {
    return false;
  }
  return true;
}

namespace {

void AppendUpper(uint32_t c, std::string* out) {
  if (c == 0xDF) {
    *out += "SS";
    return;
  }
  AppendUtf8(UpperCp(c), out);
}

}  // namespace

std::string PyUpper(const std::string& s) {
  std::string out;
  for (size_t p = 0; p < s.size();) AppendUpper(DecodeUtf8(s, &p), &out);
  return out;
}

std::string PyLower(const std::string& s) {
  std::string out;
  for (size_t p = 0; p < s.size();) AppendUtf8(LowerCp(DecodeUtf8(s, &p)), &out);
  return out;
}

std::string PyCapitalize(const std::string& s) {
  std::string out;
  bool first = true;
  for (size_t p = 0; p < s.size();) {
    uint32_t c = DecodeUtf8(s, &p);
    if (first) {
      AppendUpper(c, &out);
      first = false;
    } else {
      AppendUtf8(LowerCp(c), &out);
    }
  }
  return out;
}

std::string PyTitle(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (size_t p = 0; p < s.size();) {
    uint32_t c = DecodeUtf8(s, &p);
    if (prev_cased) {
      AppendUtf8(LowerCp(c), &out);
    } else {
      AppendUpper(c, &out);
    }
    prev_cased = IsCased(c);
  }
  return out;
}

std::string JinjaTitle(const std::string& s) {
  // Words start after runs of [-\s({\[<]; each word gets item[0].upper() + item[1:].lower().
  auto is_sep = [](uint32_t c) {
    return IsPySpace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
  };
  std::string out;
  bool at_start = true;
  for (size_t p = 0; p < s.size();) {
    uint32_t c = DecodeUtf8(s, &p);
    if (is_sep(c)) {
      AppendUtf8(c, &out);
      at_start = true;
    } else if (at_start) {
      AppendUpper(c, &out);
      at_start = false;
    } else {
      AppendUtf8(LowerCp(c), &out);
    }
  }
  return out;
}

std::string PySwapcase(const std::string& s) {
  std::string out;
  for (size_t p = 0; p < s.size();) {
    uint32_t c = DecodeUtf8(s, &p);
    if (IsUpperCp(c)) {
      AppendUtf8(LowerCp(c), &out);
    } else {
      AppendUpper(c, &out);
    }
  }
  return out;
}

// ---- strip / split / replace

std::string PyStrip(const std::string& s, const std::string* chars, bool left, bool right) {
  std::vector<uint32_t> set;
  if (chars) set = ToCodePoints(*chars);
  auto strip_it = [&](uint32_t c) {
    if (!chars) return IsPySpace(c);
    return std::find(set.begin(), set.end(), c) != set.end();
  };
  std::vector<uint32_t> cps = ToCodePoints(s);
  size_t b = 0, e = cps.size();
  if (left) {
    while (b < e && strip_it(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strip_it(cps[e - 1])) --e;
  }
  return FromCodePoints(cps, b, e);
}

Result<std::vector<std::string>> PySplit(const std::string& s, const std::string* sep,
                                         int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep == nullptr) {
    std::vector<uint32_t> cps = ToCodePoints(s);
    size_t i = 0, n = cps.size();
    while (true) {
      while (i < n && IsPySpace(cps[i])) ++i;
      if (i >= n) break;
      if (maxsplit >= 0 && int64_t(out.size()) >= maxsplit) {
        size_t e = n;
        while (e > i && IsPySpace(cps[e - 1])) --e;
        out.push_back(FromCodePoints(cps, i, e));
        break;
      }
      size_t b = i;
      while (i < n && !IsPySpace(cps[i])) ++i;
      out.push_back(FromCodePoints(cps, b, i));
    }
    return out;
  }
  if (sep->empty()) return Status::InvalidArgument("empty separator");
  size_t pos = 0;
  while (true) {
    if (maxsplit >= 0 && int64_t(out.size()) >= maxsplit) break;
    size_t f = s.find(*sep, pos);
    if (f == std::string::npos) break;
    out.push_back(s.substr(pos, f - pos));
    pos = f + sep->size();
  }
  out.push_back(s.substr(pos));
  return out;
}

Result<std::vector<std::string>> PyRSplit(const std::string& s, const std::string* sep,
                                          int64_t maxsplit) {
  if (maxsplit < 0) return PySplit(s, sep, maxsplit);
  std::vector<std::string> out;
  if (sep == nullptr) {
    std::vector<uint32_t> cps = ToCodePoints(s);
    size_t i = cps.size();
    while (true) {
      while (i > 0 && IsPySpace(cps[i - 1])) --i;
      if (i == 0) break;
      if (int64_t(out.size()) >= maxsplit) {
        size_t b = 0;
        while (b < i && IsPySpace(cps[b])) ++b;
        out.push_back(FromCodePoints(cps, b, i));
        break;
      }
      size_t e = i;
      while (i > 0 && !IsPySpace(cps[i - 1])) --i;
      out.push_back(FromCodePoints(cps, i, e));
    }
    std::reverse(out.begin(), out.end());
    return out;
  }
  if (sep->empty()) return Status::InvalidArgument("empty separator");
  size_t end = s.size();
  while (int64_t(out.size()) < maxsplit && end >= sep->size()) {
    size_t f = s.rfind(*sep, end - sep->size());
    if (f == std::string::npos) break;
    out.push_back(s.substr(f + sep->size(), end - f - sep->size()));
    end = f;
  }
  out.push_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> PySplitLines(const std::string& s, bool keepends) {
  std::vector<std::string> out;
  std::vector<uint32_t> cps = ToCodePoints(s);
  size_t b = 0, i = 0, n = cps.size();
  while (i < n) {
    uint32_t c = cps[i];
    bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
               c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) {
      ++i;
      continue;
    }
    size_t e = i;
    ++i;
    if (c == '\r' && i < n && cps[i] == '\n') ++i;
    out.push_back(FromCodePoints(cps, b, keepends ? i : e));
    b = i;
  }
  if (b < n) out.push_back(FromCodePoints(cps, b, n));
  return out;
}

Result<std::string> PyReplace(const std::string& s, const std::string& old, const std::string& repl,
                              int64_t count, size_t max_bytes) {
  std::string out;
  auto check = [&]() -> Status {
    if (out.size() > max_bytes) return Status::ResourceExhausted("replace: result too large");
    return Status::Ok();
  };
  if (old.empty()) {
    // Python inserts the replacement before every character and at the end.
    int64_t done = 0;
    size_t p = 0;
    while (true) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
        JISU_RETURN_IF_ERROR(check());
      }
      if (p >= s.size()) break;
      size_t b = p;
      DecodeUtf8(s, &p);
      out.append(s, b, p - b);
      if (count >= 0 && done >= count) {
        out.append(s, p, std::string::npos);
        break;
      }
    }
    JISU_RETURN_IF_ERROR(check());
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t f = s.find(old, pos);
    if (f == std::string::npos) break;
    out.append(s, pos, f - pos);
    out += repl;
    JISU_RETURN_IF_ERROR(check());
    pos = f + old.size();
    ++done;
  }
  out.append(s, pos, std::string::npos);
  JISU_RETURN_IF_ERROR(check());
  return out;
}

int64_t PyFind(const std::string& s, const std::string& sub, bool reverse) {
  size_t f = reverse ? s.rfind(sub) : s.find(sub);
  if (f == std::string::npos) return -1;
  return int64_t(CodePointCount(std::string_view(s).substr(0, f)));
}

int64_t PyCount(const std::string& s, const std::string& sub) {
  if (sub.empty()) return int64_t(CodePointCount(s)) + 1;
  int64_t n = 0;
  for (size_t f = s.find(sub); f != std::string::npos; f = s.find(sub, f + sub.size())) ++n;
  return n;
}

std::string PyPad(const std::string& s, int64_t width, uint32_t fill, char align) {
  int64_t len = int64_t(CodePointCount(s));
  if (width <= len) return s;
  int64_t total = width - len;
  int64_t left = 0;
  if (align == '>') {
    left = total;
  } else if (align == '^') {
    // str.center puts the extra character on the right unless the total is odd and the
    // string length is odd as well (CPython: left = pad/2 + (pad & width & 1)).
    left = total / 2 + (total & width & 1);
  }
  std::string f;
  AppendUtf8(fill, &f);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += f;
  out += s;
  for (int64_t i = 0; i < total - left; ++i) out += f;
  return out;
}

}  // namespace jisu::jinja
