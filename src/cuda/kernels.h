// Launchers for the CUDA backend's device kernels (kernels.cu), as plain C++ so that the host
// side (cuda_backend.cc) needs no device compiler. BF16 values travel as uint16_t bit patterns.
//
// KV cache layout (one allocation): [layer][block][K|V][kv_head][slot][head_dim] in BF16, so
// one block of one layer is a contiguous 2 * kv_heads * block_size * head_dim run and a key
// row of one head is head_dim contiguous elements (16-byte loads in attention).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace jisu::cuda {

// One attention work item: a tile of consecutive query tokens of one sequence against one
// chunk of its keys (all KV heads: grid.y). Plain int32 so it travels in the step's metadata.
struct AttnItem {
  int32_t q_begin;   // flat index of the tile's first token
  int32_t q_count;   // tokens in the tile
  int32_t q_pos0;    // position of the first token
  int32_t kv_begin;  // key positions [kv_begin, kv_end) of this chunk
  int32_t kv_end;
  int32_t bt_offset;   // this sequence's block table in the flat block-table array
  int32_t chunk;       // chunk index of this tile
  int32_t num_chunks;  // 1: write the final output; else partials for the combine kernel
};

struct AttnArgs {
  const float* q = nullptr;      // [T, heads * head_dim], already scaled by 1/sqrt(d)
  const uint16_t* kv = nullptr;  // this layer's blocks
  const int32_t* block_tables = nullptr;
  const AttnItem* items = nullptr;
  int num_items = 0;
  int heads = 0, kv_heads = 0, head_dim = 0, block_size = 0;
  int sliding_window = 0;  // 0: none
  int rows_per_warp = 1;   // 1, 2, 4, 8 or 16: query rows (token x head) per warp
  // Head dim 64 or 128: the mma.sync kernels of flash_attention.cu (prefill tiles of 64 rows;
  // decode items with up to 16 query heads per KV head) instead of the FP32 kernel.
  bool flash = false;
  uint16_t* out = nullptr;    // [T, heads * head_dim]
  float* part_acc = nullptr;  // [T, heads, max_chunks, head_dim]
  float* part_ml = nullptr;   // [T, heads, max_chunks, 2]
  int max_chunks = 1;
};

// True when the attention kernels are built for this head size.
bool AttentionSupportsHeadDim(int head_dim);
// Query rows one block of the attention kernel holds at rows_per_warp.
constexpr int AttentionRows(int rows_per_warp) { return 4 * rows_per_warp; }

void LaunchEmbed(const uint16_t* table, const int32_t* ids, int num_tokens, int hidden, float* x,
                 cudaStream_t stream);
// out[r] = bf16(x[rows ? rows[r] : r] * rsqrt(mean(x^2) + eps) * weight)
void LaunchRmsNorm(const float* x, const int32_t* rows, int num_rows, int hidden,
                   const float* weight, float eps, uint16_t* out, cudaStream_t stream);
// qkv: [T, q_dim + 2 kv_dim] f32 from the fused projection. Adds the bias (if any), rotates q
// and k by each token's position, scales q into q_out (f32) and writes k, v (bf16) into the
// cache slot slots[t] (= block * block_size + offset) of this layer.
void LaunchQkvRope(const float* qkv, const float* bias, const int32_t* positions,
                   const int32_t* slots, int num_tokens, int heads, int kv_heads, int head_dim,
                   const float* inv_freq, bool interleaved, float q_scale, float* q_out,
                   uint16_t* kv_layer, int block_size, cudaStream_t stream);
// gate_up: [T, 2 * ffn] (gate then up) -> out [T, ffn] = bf16(silu(gate) * up)
void LaunchSiluMul(const float* gate_up, int num_tokens, int ffn, uint16_t* out,
                   cudaStream_t stream);
void LaunchAttention(const AttnArgs& args, cudaStream_t stream);
// The mma.sync kernels (flash_attention.cu); false (nothing launched) for shapes they lack.
bool LaunchFlashAttention(const AttnArgs& args, cudaStream_t stream);
// Merges the partial softmaxes of tokens whose chunk count (token_chunks[t]) is > 1.
void LaunchAttentionCombine(const AttnArgs& args, const int32_t* token_chunks, int num_tokens,
                            cudaStream_t stream);

// y[t, n] (+)= w[n, :] . x[t, :] for 1..kMaxGemvTokens tokens (w bf16 [n, k], x bf16 [T, k],
// y f32 [T, n]); false (nothing launched) when the shape is not handled (k % 8 != 0).
constexpr int kMaxGemvTokens = 8;
bool LaunchGemv(const uint16_t* w, int n, int k, const uint16_t* x, int tokens, float* y,
                bool accumulate, cudaStream_t stream);

// The unfused baseline of the fusion study (unfused_kernels.cu): each elementwise step its own
// kernel, as an eager framework runs them, instead of the fused kernels above.
// x[t, i] += b[i] for t < tokens, i < n (row stride `stride`).
void LaunchAddBias(float* x, const float* b, int tokens, int n, int stride, cudaStream_t stream);
// Rotates the q and k heads of qkv rows in place.
void LaunchRopeInPlace(float* qkv, const int32_t* positions, int tokens, int heads, int kv_heads,
                       int head_dim, const float* inv_freq, bool interleaved, cudaStream_t stream);
// q_out = q part of qkv * scale; k, v parts to the cache slots.
void LaunchSplitQkvToCache(const float* qkv, const int32_t* slots, int tokens, int heads,
                           int kv_heads, int head_dim, float q_scale, float* q_out,
                           uint16_t* kv_layer, int block_size, cudaStream_t stream);
// gate_up [T, 2 ffn]: gate = silu(gate) in place; then out = bf16(gate * up).
void LaunchSiluInPlace(float* gate_up, int tokens, int ffn, cudaStream_t stream);
void LaunchMulToBf16(const float* gate_up, int tokens, int ffn, uint16_t* out, cudaStream_t stream);
// x += y, n elements.
void LaunchAdd(float* x, const float* y, size_t n, cudaStream_t stream);

// One logits row to sample on the device (cuda/sampling.cu): the host sampler's temperature,
// top-k, top-p and min-p (penalties and logprobs stay on the host), and the uniform draw in
// [0, 1) from the request's generator. temperature <= 0: greedy.
struct DeviceSampling {
  int32_t row = 0;  // row of the logits matrix
  float temperature = 1.0f;
  int32_t top_k = 0;  // <= 0: off
  float top_p = 1.0f;
  float min_p = 0.0f;
  double u = 0.0;
};
// out[i] = the token drawn from logits row params[i].row ([*, vocab] f32, device memory).
void LaunchSampleRows(const float* logits, int vocab, const DeviceSampling* params, int num_rows,
                      int32_t* out, cudaStream_t stream);

// Weight generation for benchmarks: uniform in [-scale, scale] from a counter hash.
void LaunchFillRandomBf16(uint16_t* dst, size_t n, float scale, uint64_t seed, cudaStream_t stream);
void LaunchFillF32(float* dst, size_t n, float value, cudaStream_t stream);

}  // namespace jisu::cuda
