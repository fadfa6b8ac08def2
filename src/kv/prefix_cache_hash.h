// Hashes that identify cached KV blocks. A full block's hash chains over everything that decides
// its KV: the parent block's hash (so equal tokens after different prefixes are different
// blocks), its block_size token ids in order, and the request's cache salt (so tenants that
// must not share never do; fold the model identity into the salt if one pool ever serves two
// models). 64-bit, xxHash-style rounds and a murmur3 finalizer: a one-bit change in any input
// flips about half the output bits.
// Collisions: the pool also stores each cached block's parent hash, salt hash and token ids and
// compares them on lookup, so a hit is exact unless two different prefixes, or two different
// salts, collide in 64 bits (~2^-64 per pair): accepted, as vLLM does with its default hash.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace jisu {

// Parent hash of the first block of every sequence.
inline constexpr uint64_t kRootBlockHash = 0;

uint64_t HashCacheSalt(std::string_view salt);
uint64_t HashBlockTokens(uint64_t parent_hash, std::span<const int32_t> tokens, uint64_t salt_hash);

}  // namespace jisu
