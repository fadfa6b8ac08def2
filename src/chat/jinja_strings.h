// Python str semantics on UTF-8 strings for the Jinja builtins: case mapping, strip/split,
// replace, printf-style % formatting and str.format. Case mapping covers ASCII, Latin-1,
// Latin Extended-A, Greek, Cyrillic, Armenian and fullwidth Latin (simple mappings plus
// German sharp s); other scripts are left unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/jinja_value.h"
#include "jisu/status.h"

namespace jisu::jinja {

uint32_t UpperCp(uint32_t cp);
uint32_t LowerCp(uint32_t cp);
bool IsCased(uint32_t cp);
bool IsUpperCp(uint32_t cp);
bool IsLowerCp(uint32_t cp);
bool IsAlnumCp(uint32_t cp);  // approximates str.isalnum beyond ASCII

std::string PyUpper(const std::string& s);
std::string PyLower(const std::string& s);
std::string PyCapitalize(const std::string& s);
std::string PyTitle(const std::string& s);     // str.title()
std::string JinjaTitle(const std::string& s);  // the `title` filter
std::string PySwapcase(const std::string& s);

// strip/lstrip/rstrip; chars == nullptr strips whitespace.
std::string PyStrip(const std::string& s, const std::string* chars, bool left, bool right);
// str.split(sep, maxsplit); sep == nullptr splits on whitespace runs.
Result<std::vector<std::string>> PySplit(const std::string& s, const std::string* sep,
                                         int64_t maxsplit);
Result<std::vector<std::string>> PyRSplit(const std::string& s, const std::string* sep,
                                          int64_t maxsplit);
std::vector<std::string> PySplitLines(const std::string& s, bool keepends);
// str.replace; count < 0 replaces all. Fails when the result would exceed max_bytes.
Result<std::string> PyReplace(const std::string& s, const std::string& old, const std::string& repl,
                              int64_t count, size_t max_bytes);
// Index in code points of the first/last occurrence, or -1.
int64_t PyFind(const std::string& s, const std::string& sub, bool reverse);
int64_t PyCount(const std::string& s, const std::string& sub);
// str.center/ljust/rjust.
std::string PyPad(const std::string& s, int64_t width, uint32_t fill, char align);

// `fmt % args` (printf-style).
Result<std::string> PercentFormat(const std::string& fmt, const Value& args, size_t max_bytes);
// str.format(*pos, **kw).
Result<std::string> BraceFormat(const std::string& fmt, const CallArgs& args, size_t max_bytes);

}  // namespace jisu::jinja
