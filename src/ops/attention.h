// Attention of one query position over a sequence's paged KV cache, for the query heads that
// share one KV head (grouped-query attention): the decode-time inner loop of the forward pass.
//   out[g][d] = sum_{p in [first, last]} softmax_p(scale * q_g . k_p) * v_p[d]
// Keys and values live in fixed-size blocks found through the sequence's block table; the
// kernel reads each key and value row where it is (no gather into a contiguous buffer).
#pragma once

#include <cstdint>

namespace jisu {

struct PagedKvHead {
  const float* keys = nullptr;  // key of (block b, slot s): keys + b * block_stride + s * head_dim
  const float* values = nullptr;  // same layout
  int64_t block_stride = 0;       // floats between consecutive blocks
  int64_t block_size = 0;         // slots per block
  const int32_t* block_table = nullptr;
};

// q: `group` query heads of head_dim floats, contiguous; out: same shape. scores: scratch of
// at least group * score_stride floats, score_stride >= last - first + 1. Single-threaded
// (the caller parallelizes over tokens and KV heads). Uses AVX-512 (else AVX2) where present
// and head_dim is 32, 64, 96 or 128; elsewhere the portable loops.
void AttendPaged(const float* q, int64_t group, int64_t head_dim, float scale,
                 const PagedKvHead& kv, int64_t first, int64_t last, float* scores,
                 int64_t score_stride, float* out);

namespace attention_internal {
// The portable version (also the fallback); tests compare the two.
void AttendPagedPortable(const float* q, int64_t group, int64_t head_dim, float scale,
                         const PagedKvHead& kv, int64_t first, int64_t last, float* scores,
                         int64_t score_stride, float* out);
// False where AVX-512 is not compiled in, not on this CPU, or head_dim is not supported.
bool AttendPagedAvx512(const float* q, int64_t group, int64_t head_dim, float scale,
                       const PagedKvHead& kv, int64_t first, int64_t last, float* scores,
                       int64_t score_stride, float* out);
// The same for AVX2 (head_dim 32, 64, 96, 128).
bool AttendPagedAvx2(const float* q, int64_t group, int64_t head_dim, float scale,
                     const PagedKvHead& kv, int64_t first, int64_t last, float* scores,
                     int64_t score_stride, float* out);
}  // namespace attention_internal

}  // namespace jisu
