// Text helpers for the format readers: strict UTF-8 validation (applied to names read from
// files) and quoting of untrusted names in error messages (truncated, control bytes escaped).
#pragma once

#include <string>
#include <string_view>

namespace jisu {

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool IsValidUtf8(std::string_view s);

// 'name' for messages; at most ~120 bytes of it, control and non-ASCII bytes as \xNN.
std::string QuoteName(std::string_view s);

}  // namespace jisu
