// GPT-2's byte-to-unicode mapping used by byte-level BPE: every byte maps to one printable code
// point (printable Latin-1 bytes map to themselves, the other 68 to U+0100..U+0143 in byte
// order), so any byte string is spelled as valid UTF-8 and back without loss.
#pragma once

#include <string>
#include <string_view>

namespace jisu::byte_level {

// UTF-8 spelling of byte b's code point.
const std::string& Spell(unsigned char b);
// Appends the byte-level spelling of every byte of `bytes`.
void SpellBytes(std::string_view bytes, std::string* out);
// Byte for a code point of the mapping, or -1.
int ByteOf(char32_t cp);
// Decodes a byte-level token: the bytes its code points stand for; false (out untouched) if
// some code point is not in the mapping.
bool Unspell(std::string_view token, std::string* out);
// True if every code point of valid UTF-8 `s` is in the mapping.
bool IsSpelled(std::string_view s);

}  // namespace jisu::byte_level
