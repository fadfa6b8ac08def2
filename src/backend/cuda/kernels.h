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

#ifdef __CUDACC__
// Programmatic dependent launch (PTX griddepcontrol, sm_90): a kernel that calls
// GridLaunchDependents lets the next kernel of the stream launch before it finishes, if that
// one was launched with the programmatic-serialization attribute (the GEMVs of gemv.cu);
// such a kernel must call GridDependencyWait before it reads anything its predecessors write.
// No-ops elsewhere.
__device__ __forceinline__ void GridLaunchDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void GridDependencyWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Rotates the pair (a, b) by the angle pos * inv_freq exactly as the CPU backend does: the angle
// is a float product, its cosine and sine correctly rounded (computed in double, then float).
// Split in two so that a kernel can take the (double precision, ~0.3 us) sine and cosine off
// its critical path.
__device__ __forceinline__ void RopeCosSin(float pos, float inv_freq, float& cf, float& sf) {
  const double angle = static_cast<double>(pos * inv_freq);
  double s, c;
  sincos(angle, &s, &c);
  cf = static_cast<float>(c);
  sf = static_cast<float>(s);
}
__device__ __forceinline__ void RopeApply(float cf, float sf, float& a, float& b) {
  const float r0 = a * cf - b * sf;
  const float r1 = b * cf + a * sf;
  a = r0;
  b = r1;
}
__device__ __forceinline__ void RopeRotate(float pos, float inv_freq, float& a, float& b) {
  float cf, sf;
  RopeCosSin(pos, inv_freq, cf, sf);
  RopeApply(cf, sf, a, b);
}

// Head 0's K row of cache slot `slot` (= block * block_size + offset) in one layer's blocks;
// head h's is h * block_size * head_dim further on, the V rows kv_heads heads after the K rows.
template <typename T>
__device__ __forceinline__ T* CacheSlotK(T* kv_layer, int slot, int block_size, int kv_heads,
                                         int head_dim) {
  const size_t head_stride = static_cast<size_t>(block_size) * head_dim;
  return kv_layer + static_cast<size_t>(slot / block_size) * 2 * kv_heads * head_stride +
         static_cast<size_t>(slot % block_size) * head_dim;
}
#endif

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
  // Decode block shape of the flash kernel (warps, keys per tile, stages), for the sweep in
  // bench-gpu: 0 = the measured default per head dim (2/32/3 at 128, 4/64/2 at 64),
  // 1 = 2/32/4, 2 = 4/64/2, 3 = 4/64/3, 4 = 2/64/2, 5 = 2/64/3, 6 = 8/128/2, 7 = 4/128/2.
  // The backend passes 7 for 0 at head dim 128 when the decode grid fits in one block an SM.
  int decode_variant = 0;
  uint16_t* out = nullptr;    // [T, heads * head_dim]
  float* part_acc = nullptr;  // [T, heads, max_chunks, head_dim]
  float* part_ml = nullptr;   // [T, heads, max_chunks, 2]
  int max_chunks = 1;
};

// True when the attention kernels are built for this head size.
bool AttentionSupportsHeadDim(int head_dim);
// Query rows one block of the attention kernel holds at rows_per_warp.
constexpr int AttentionRows(int rows_per_warp) { return 4 * rows_per_warp; }

// x[t] = table[ids[t]] * scale (Gemma scales its embeddings by sqrt(hidden)).
void LaunchEmbed(const uint16_t* table, const int32_t* ids, int num_tokens, int hidden, float scale,
                 float* x, cudaStream_t stream);
// out[r] = bf16(x[rows ? rows[r] : r] * rsqrt(mean(x^2) + eps) * weight)
void LaunchRmsNorm(const float* x, const int32_t* rows, int num_rows, int hidden,
                   const float* weight, float eps, uint16_t* out, cudaStream_t stream);
// qkv: [T, stride] f32 rows whose first heads * head_dim values are q heads, then kv_heads k
// heads: RMS-normalizes each q and k head over head_dim in place, times q_weight / k_weight
// [head_dim] (Qwen3's and Gemma 3's QK-norm).
void LaunchHeadRmsNorm(float* qkv, const float* q_weight, const float* k_weight, int tokens,
                       int heads, int kv_heads, int head_dim, int stride, float eps,
                       cudaStream_t stream);
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
// The ops of layer programs beyond the Llama family's (layer_kernels.cu).
// x[t] += RMSNorm(y[t]) * weight: a norm of a product's output before the residual add (Gemma).
void LaunchRmsNormAdd(float* x, const float* y, int num_tokens, int hidden, const float* weight,
                      float eps, cudaStream_t stream);
// gate_up: [T, 2 * ffn] -> out [T, ffn] = bf16(gelu_tanh(gate) * up)
void LaunchGeluTanhMul(const float* gate_up, int num_tokens, int ffn, uint16_t* out,
                       cudaStream_t stream);
// x[i] = cap * tanh(x[i] / cap), n floats (the final logit softcap).
void LaunchSoftcap(float* x, size_t n, float cap, cudaStream_t stream);
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
                bool accumulate, cudaStream_t stream, bool programmatic_launch = true);

// y[t, n] (+)= w[n, :] . x[t, :] for 1..kMaxSkinnyTokens tokens on tensor cores (skinny_gemm.cu):
// the decode batches between the GEMV and cuBLAS, where the product is still bound by the weight
// stream. Narrow matrices split k over the blocks of a cluster (sm_90), reduced in a fixed
// order. False (nothing launched) for shapes it does not handle (k % 8 != 0, tokens out of
// range).
constexpr int kMaxSkinnyTokens = 16;
// k splits for an [n, k] matrix on num_sms SMs (exposed for tests and reports).
int SkinnyGemmSplits(int n, int k, int num_sms);
bool LaunchSkinnyGemm(const uint16_t* w, int n, int k, const uint16_t* x, int tokens, float* y,
                      bool accumulate, int num_sms, cudaStream_t stream);

// The small-batch GEMV with its neighbours fused (gemv.cu). Each warp computes one "unit", two
// weight rows, for every token; the op says which rows pair up and what the epilogue does.
enum class GemvOp {
  kStore,       // y[t, r] = dot (units: rows 2u, 2u + 1)
  kAccumulate,  // y[t, r] += dot: the residual add; optionally u_out and ss_out for the next norm
  kSwiGlu,      // act[t, i] = bf16(silu(gate_i) * up_i), gate rows [0, n), up rows [n, 2n)
  kQkvRope,     // bias + RoPE pair of a q/k head (or two v rows) -> q_out (scaled), K/V cache
};
struct GemvArgs {
  GemvOp op = GemvOp::kStore;
  const uint16_t* w = nullptr;  // bf16 [rows, k]
  int rows = 0, n = 0, k = 0;
  int tokens = 1;
  int units = 0;                // set by LaunchGemvOp (GemvUnits)
  const uint16_t* x = nullptr;  // bf16 [tokens, k]
  // Non-null: x is u = bf16(x' * g) of a residual x' and every dot product is scaled by
  // rsqrt(sum of ss_in[p * tokens + t] over p < ss_in_parts / k + eps): the RMSNorm, fused.
  const float* ss_in = nullptr;
  int ss_in_parts = 0;
  float eps = 0.0f;
  float* y = nullptr;               // kStore / kAccumulate: f32 [tokens, rows]
  uint16_t* u_out = nullptr;        // kAccumulate: bf16 [tokens, rows] = y * u_weight
  const float* u_weight = nullptr;  // the next RMSNorm's weight
  float* ss_out = nullptr;          // kAccumulate: [GemvBlocks(*this)][tokens] partial sums of y^2
  uint16_t* act = nullptr;          // kSwiGlu: bf16 [tokens, n]
  // kQkvRope (rows = q_dim + 2 kv_dim):
  const float* bias = nullptr;
  const int32_t* positions = nullptr;
  const int32_t* slots = nullptr;
  const float* inv_freq = nullptr;
  bool interleaved = false;
  float q_scale = 1.0f;
  float* q_out = nullptr;
  uint16_t* kv_layer = nullptr;
  int block_size = 0, heads = 0, kv_heads = 0, head_dim = 0;
  // Programmatic dependent launch (sm_90): the next kernel's prologue overlaps this one's tail.
  // Off only for measurements (CudaBackendOptions::gemv_pdl).
  bool programmatic_launch = true;
};
int GemvUnits(const GemvArgs& args);
int GemvBlocks(const GemvArgs& args);  // the grid, and the number of ss_out parts
// False (nothing launched) when the shape is not handled (k % 8 != 0, tokens > 8).
bool LaunchGemvOp(const GemvArgs& args, cudaStream_t stream);
// The embedding for the fused path: x = table[ids] * scale, u = bf16(x * g), ss[t] = sum(x^2)
// (one part).
void LaunchEmbedNormInput(const uint16_t* table, const int32_t* ids, int num_tokens, int hidden,
                          float scale, const float* g, float* x, uint16_t* u, float* ss,
                          cudaStream_t stream);

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

// One logits row to sample on the device (backend/cuda/sampling.cu): the host sampler's
// temperature, top-k, top-p and min-p (penalties and logprobs stay on the host), and the uniform
// draw in [0, 1) from the request's generator. temperature <= 0: greedy.
struct DeviceSampling {
  int32_t row = 0;  // row of the logits matrix
  float temperature = 1.0f;
  int32_t top_k = 0;  // <= 0: off
  float top_p = 1.0f;
  float min_p = 0.0f;
  double u = 0.0;
};
// out[i] = the token drawn from logits row params[i].row ([*, vocab] f32, device memory).
// `host_params` is the host's copy of `params` (read here). `scratch` (SampleScratchBytes(),
// device memory, no initial contents) lets few rows be split over several blocks; null: one
// block per row.
//
// Two implementations of the same filters: the fast path (up to kMaxFastSampleRows rows, each
// split over up to 64 blocks, logits in registers, exact fixed-point masses, rows meeting at
// their own barriers) and the reference path (any number of rows; a split block keeps its
// share of the row in shared memory when it has at most `max_cached` floats, < 0: the
// kernel's limit, 0: never, for tests). kAuto takes the fast path where it applies; returns the
// path taken (kAuto: nothing launched).
constexpr int kMaxFastSampleRows = 64;
enum class SamplePath { kAuto, kFast, kReference };
size_t SampleScratchBytes();
SamplePath LaunchSampleRows(const float* logits, int vocab, const DeviceSampling* params,
                            const DeviceSampling* host_params, int num_rows, int32_t* out,
                            void* scratch, cudaStream_t stream, int max_cached = -1,
                            SamplePath path = SamplePath::kAuto);

// Structured output and logit_bias on the device (token_mask.cu), launched on the logits before
// LaunchSampleRows. masks: [num_rows][words] (bit id % 32 of word id / 32 set = allowed; bits
// at or past vocab are ignored); rows[i]: the logits row mask i applies to. Disallowed ids get
// -inf; allowed ones keep their value.
void LaunchApplyTokenMasks(float* logits, int vocab, const uint32_t* masks, int words,
                           const int32_t* rows, int num_rows, cudaStream_t stream);
// A row's logit_bias entries: entries [begin, begin + count) add to logits row `row`.
struct DeviceBiasRow {
  int32_t row = 0;
  int32_t begin = 0;
  int32_t count = 0;
};
struct DeviceBiasEntry {
  int32_t id = 0;  // ids outside [0, vocab) are skipped, as on the host
  float bias = 0;
};
// logits[row, id] += bias for every entry, each row's entries in order (as the host sampler).
void LaunchAddLogitBias(float* logits, int vocab, const DeviceBiasRow* rows, int num_rows,
                        const DeviceBiasEntry* entries, cudaStream_t stream);

// Weight generation for benchmarks: uniform in [-scale, scale] from a counter hash.
void LaunchFillRandomBf16(uint16_t* dst, size_t n, float scale, uint64_t seed, cudaStream_t stream);
void LaunchFillF32(float* dst, size_t n, float value, cudaStream_t stream);

}  // namespace jisu::cuda
