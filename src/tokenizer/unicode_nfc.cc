#include "tokenizer/unicode_nfc.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "core/utf8.h"

namespace jisu {
namespace {

struct CccEntry {
  uint32_t cp;
  uint8_t ccc;
};
struct DecompEntry {
  uint32_t cp, first, second;  // second == 0: singleton decomposition
};
struct CompEntry {
  uint32_t first, second, composite;
};

#include "tokenizer/unicode_tables.inc"

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
              kSCount = kLCount * kNCount;

int Ccc(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto it = std::lower_bound(std::begin(kCcc), std::end(kCcc), cp,
                                   [](const CccEntry& e, char32_t c) { return e.cp < c; });
  return (it != std::end(kCcc) && it->cp == cp) ? it->ccc : 0;
}

void Decompose(char32_t cp, std::vector<char32_t>* out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const int s = static_cast<int>(cp - kSBase);
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out->push_back(kTBase + s % kTCount);
    return;
  }
  if (cp >= 0xC0) {
    const auto it = std::lower_bound(std::begin(kDecomp), std::end(kDecomp), cp,
                                     [](const DecompEntry& e, char32_t c) { return e.cp < c; });
    if (it != std::end(kDecomp) && it->cp == cp) {
      Decompose(it->first, out);  // depth is bounded by the table (a few levels)
      if (it->second != 0) Decompose(it->second, out);
      return;
    }
  }
  out->push_back(cp);
}

// Composite of a starter and a following character, or 0.
char32_t Compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  const auto it =
      std::lower_bound(std::begin(kComp), std::end(kComp), std::make_pair(a, b),
                       [](const CompEntry& e, const std::pair<char32_t, char32_t>& k) {
                         return e.first != k.first ? e.first < k.first : e.second < k.second;
                       });
  if (it != std::end(kComp) && it->first == a && it->second == b) return it->composite;
  return 0;
}

}  // namespace

std::string NfcNormalize(std::string_view s) {
  // Text below U+0300 is already NFC: nothing there decomposes into or composes with it.
  bool all_low = true;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0xCC) {
      all_low = false;
      break;
    }
  }
  if (all_low) return std::string(s);

  std::vector<char32_t> cps;
  cps.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    char32_t cp;
    size_t len;
    if (utf8::Next(s, pos, &cp, &len) != utf8::Step::kValid) cp = 0xFFFD;
    Decompose(cp, &cps);
    pos += len;
  }
  // Canonical ordering: stable sort of each run of non-starters by combining class.
  std::vector<int> cls(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) cls[i] = Ccc(cps[i]);
  for (size_t i = 0; i < cps.size();) {
    if (cls[i] == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && cls[j] != 0) ++j;
    std::vector<std::pair<int, char32_t>> run;
    for (size_t k = i; k < j; ++k) run.emplace_back(cls[k], cps[k]);
    std::stable_sort(run.begin(), run.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (size_t k = i; k < j; ++k) {
      cls[k] = run[k - i].first;
      cps[k] = run[k - i].second;
    }
    i = j;
  }
  // Canonical composition.
  std::vector<char32_t> out;
  std::vector<int> out_cls;
  out.reserve(cps.size());
  long starter = -1;  // index in `out` of the last starter
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    const int cc = cls[i];
    if (starter >= 0) {
      const int last_cc = out_cls.back();
      const bool blocked =
          static_cast<long>(out.size()) - 1 != starter && (last_cc == 0 || last_cc >= cc);
      if (!blocked) {
        const char32_t comp = Compose(out[starter], c);
        if (comp != 0) {
          out[starter] = comp;
          continue;
        }
      }
    }
    out.push_back(c);
    out_cls.push_back(cc);
    if (cc == 0) starter = static_cast<long>(out.size()) - 1;
  }
  std::string result;
  result.reserve(s.size());
  for (char32_t c : out) utf8::Append(&result, c);
  return result;
}

}  // namespace jisu
