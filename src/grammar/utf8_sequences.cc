#include "grammar/utf8_sequences.h"

namespace jisu::grammar {
namespace {

int EncodedLength(uint32_t cp) {
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp < 0x10000) return 3;
  return 4;
}

void Encode(uint32_t cp, int n, uint8_t* b) {
  switch (n) {
    case 1:
      b[0] = static_cast<uint8_t>(cp);
      break;
    case 2:
      b[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
      b[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    case 3:
      b[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
      b[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      b[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    default:
      b[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
      b[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
      b[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      b[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
  }
}

// [lo, hi] share an encoded length n. Splits until, for every continuation position, the range
// is "full" below that position, so each byte position varies independently.
void Split(uint32_t lo, uint32_t hi, int n, std::vector<ByteSequence>* out) {
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        Split(lo, lo | m, n, out);
        Split((lo | m) + 1, hi, n, out);
        return;
      }
      if ((hi & m) != m) {
        Split(lo, (hi & ~m) - 1, n, out);
        Split(hi & ~m, hi, n, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  Encode(lo, n, a);
  Encode(hi, n, b);
  ByteSequence seq;
  for (int k = 0; k < n; ++k) seq.push_back({a[k], b[k]});
  out->push_back(std::move(seq));
}

}  // namespace

void Utf8Sequences(uint32_t lo, uint32_t hi, std::vector<ByteSequence>* out) {
  static constexpr uint32_t kMaxOf[] = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  while (lo <= hi) {
    const int n = EncodedLength(lo);
    const uint32_t end = hi < kMaxOf[n] ? hi : kMaxOf[n];
    Split(lo, end, n, out);
    if (end == hi) break;
    lo = end + 1;
  }
}

}  // namespace jisu::grammar
