// Attention of one query position over a sequence's paged KV cache, for the query heads that
// share one KV head (grouped-query attention): the decode-time inner loop of the forward pass.
//   out[g][d] = sum_{p in [first, last]} softmax_p(scale * q_g . k_p) * v_p[d]
// Keys and values live in fixed-size blocks found through the sequence's block table; the
// kernel reads each key and value row where it is (no gather into a contiguous buffer); F16
// rows are widened to float as they are read, and all arithmetic is float32.
#pragma once

#include <cstddef>
#include <cstdint>

namespace jisu {

// Element type of the cached keys and values. F16 halves the bytes attention streams per
// step (decode attention is memory-bound); F32 keeps what the golden tests compare exactly.
enum class KvType : uint8_t { kF32, kF16 };
inline size_t KvTypeBytes(KvType t) { return t == KvType::kF16 ? 2 : 4; }

struct PagedKvHead {
  KvType type = KvType::kF32;
  // Key of (block b, slot s): element b * block_stride + s * head_dim of `keys`, each of
  // `type`.
  const void* keys = nullptr;
  const void* values = nullptr;  // same layout
  int64_t block_stride = 0;      // elements between consecutive blocks
  int64_t block_size = 0;        // slots per block
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
