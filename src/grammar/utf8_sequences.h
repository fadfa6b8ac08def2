// Code point ranges as UTF-8 byte-range sequences: the bridge between character classes (code
// points) and the matcher, which advances byte by byte because tokens split characters.
// A range of code points becomes a few sequences of byte ranges whose cross products are exactly
// the UTF-8 encodings of the range (the classic construction of RE2 and Rust's regex-syntax):
// [U+0080, U+07FF] is one sequence [C2-DF][80-BF]; [U+0800, U+FFFF] without surrogates is
// [E0][A0-BF][80-BF], [E1-EC][80-BF][80-BF], [ED][80-9F][80-BF], [EE-EF][80-BF][80-BF].
#pragma once

#include <cstdint>
#include <vector>

namespace jisu::grammar {

struct ByteRange {
  uint8_t lo = 0, hi = 0;
  bool operator==(const ByteRange&) const = default;
};
using ByteSequence = std::vector<ByteRange>;  // 1 to 4 ranges

// Sequences for the code points [lo, hi] (hi <= 0x10FFFF; surrogates must have been removed),
// appended to `out` in increasing order; sequences are disjoint.
void Utf8Sequences(uint32_t lo, uint32_t hi, std::vector<ByteSequence>* out);

}  // namespace jisu::grammar
