#include "kv/prefix_cache_hash.h"

namespace jisu {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t Round(uint64_t acc, uint64_t word) {
  return Rotl(acc + word * kPrime2, 31) * kPrime1;
}

inline uint64_t Finalize(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace

uint64_t HashCacheSalt(std::string_view salt) {
  uint64_t acc = kPrime3 ^ salt.size();
  for (unsigned char c : salt) acc = Round(acc, c);
  return Finalize(acc);
}

uint64_t HashBlockTokens(uint64_t parent_hash, std::span<const int32_t> tokens,
                         uint64_t salt_hash) {
  uint64_t acc = Round(Round(kPrime3 ^ tokens.size(), parent_hash), salt_hash);
  size_t i = 0;
  for (; i + 1 < tokens.size(); i += 2) {
    acc = Round(acc, static_cast<uint32_t>(tokens[i]) |
                         (uint64_t{static_cast<uint32_t>(tokens[i + 1])} << 32));
  }
  if (i < tokens.size()) acc = Round(acc, static_cast<uint32_t>(tokens[i]));
  return Finalize(acc);
}

}  // namespace jisu
