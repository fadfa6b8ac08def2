// How many keys one attention work item covers when the backend picks (policy; the items
// themselves are built in cuda_step_meta.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>

namespace jisu::cuda {

// Keys are split only when the tiles alone (tiles x KV heads work items) leave SMs idle: then
// into about enough chunks for four blocks an SM, at least 128 keys each. A chunk is a multiple
// of lcm(page size, 16) keys so that every chunk starts on a page boundary: the flash kernels
// copy K/V in page-aligned runs of up to 16 keys and fall back to a per-key table lookup
// otherwise (a 1027-key context split at key 514 had sent half the batch-64 tiles that way).
inline int64_t AutoAttentionChunk(int64_t tiles, int64_t kv_heads, int64_t num_sms,
                                  int64_t max_range, int64_t block_size) {
  const int64_t base = std::max<int64_t>(1, tiles * kv_heads);
  const int64_t want = (4 * num_sms + base - 1) / base;
  int64_t chunk = want <= 1 ? max_range : std::max<int64_t>(128, (max_range + want - 1) / want);
  const int64_t align = std::lcm<int64_t>(std::max<int64_t>(1, block_size), 16);
  return std::max<int64_t>(1, (chunk + align - 1) / align * align);
}

}  // namespace jisu::cuda
