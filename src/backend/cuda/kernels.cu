// Device kernels of the CUDA backend. Memory-bound elementwise work is fused into the kernels
// that already touch the data (bias + RoPE + KV write; gate * up; the residual add happens in
// the GEMM epilogue, beta = 1). Attention runs on the mma.sync kernels of flash_attention.cu
// where they apply (head dim 64/128); the FP32 kernel here covers every other shape (head dim
// 32 and 256, GQA groups above 16) and the plain path: a block holds up to 4 * RPW query rows
// (token x query head of one KV head group), streams the keys of one chunk through shared memory 32
// at a time and keeps an online softmax per row, so no score matrix is ever materialized.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cuda/kernels.h"
#include "backend/cuda/reduce.cuh"

namespace jisu::cuda {
namespace {

using bf16 = __nv_bfloat16;

__global__ void EmbedKernel(const bf16* table, const int32_t* ids, int hidden, float scale,
                            float* x) {
  const int t = blockIdx.x;
  const bf16* row = table + static_cast<size_t>(ids[t]) * hidden;
  float* out = x + static_cast<size_t>(t) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) out[i] = __bfloat162float(row[i]) * scale;
}

__global__ void RmsNormKernel(const float* x, const int32_t* rows, int hidden, const float* weight,
                              float eps, bf16* out) {
  __shared__ float scratch[32];
  const int r = blockIdx.x;
  const float* in = x + static_cast<size_t>(rows ? rows[r] : r) * hidden;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) ss += in[i] * in[i];
  ss = BlockSum(ss, scratch);
  const float inv = rsqrtf(ss / static_cast<float>(hidden) + eps);
  bf16* o = out + static_cast<size_t>(r) * hidden;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    o[i] = __float2bfloat16(in[i] * inv * weight[i]);
  }
}

// One warp per (token, head): each q and k head of a qkv row RMS-normed over head_dim in
// place (Qwen3, Gemma 3). k heads follow the q heads in the row.
__global__ void HeadRmsNormKernel(float* qkv, const float* q_weight, const float* k_weight,
                                  int tokens, int heads, int kv_heads, int head_dim, int stride,
                                  float eps) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  const int per_token = heads + kv_heads;
  if (warp >= tokens * per_token) return;  // uniform over the warp
  const int t = warp / per_token, h = warp % per_token;
  float* x = qkv + static_cast<size_t>(t) * stride + h * head_dim;
  const float* w = h < heads ? q_weight : k_weight;
  float ss = 0.0f;
  for (int i = lane; i < head_dim; i += 32) ss += x[i] * x[i];
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  const float inv = rsqrtf(ss / static_cast<float>(head_dim) + eps);
  for (int i = lane; i < head_dim; i += 32) x[i] = w[i] * (x[i] * inv);
}

// The same norm with the row held in registers (read once, float4 loads, the weights fetched
// while the sum is reduced): a decode step runs it twice a layer on a handful of rows, where
// the load-reduce-reload chain of RmsNormKernel is all latency (Nsight Compute at batch 64:
// 4.8 us a launch, 65 launches a step). hidden % 4 == 0, hidden <= 4 * kVecs * blockDim.x.
constexpr int kNormVecs = 4;
__global__ void RmsNormVecKernel(const float* x, const int32_t* rows, int hidden,
                                 const float* weight, float eps, bf16* out) {
  __shared__ float scratch[32];
  const int r = blockIdx.x;
  const float4* in =
      reinterpret_cast<const float4*>(x + static_cast<size_t>(rows ? rows[r] : r) * hidden);
  const float4* w = reinterpret_cast<const float4*>(weight);
  const int n4 = hidden / 4;
  float4 v[kNormVecs], g[kNormVecs];
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < kNormVecs; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i < n4) {
      v[j] = in[i];
      ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
    }
  }
#pragma unroll
  for (int j = 0; j < kNormVecs; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i < n4) g[j] = w[i];
  }
  ss = BlockSum(ss, scratch);
  const float inv = rsqrtf(ss / static_cast<float>(hidden) + eps);
  __nv_bfloat162* o = reinterpret_cast<__nv_bfloat162*>(out + static_cast<size_t>(r) * hidden);
#pragma unroll
  for (int j = 0; j < kNormVecs; ++j) {
    const int i = threadIdx.x + j * blockDim.x;
    if (i < n4) {
      o[2 * i] = __floats2bfloat162_rn(v[j].x * inv * g[j].x, v[j].y * inv * g[j].y);
      o[2 * i + 1] = __floats2bfloat162_rn(v[j].z * inv * g[j].z, v[j].w * inv * g[j].w);
    }
  }
}

__global__ void QkvRopeKernel(const float* qkv, const float* bias, const int32_t* positions,
                              const int32_t* slots, int heads, int kv_heads, int head_dim,
                              const float* inv_freq, bool interleaved, float q_scale, float* q_out,
                              bf16* kv_layer, int block_size) {
  const int t = blockIdx.x;
  const int q_dim = heads * head_dim;
  const int kv_dim = kv_heads * head_dim;
  const int half = head_dim / 2;
  const float* row = qkv + static_cast<size_t>(t) * (q_dim + 2 * kv_dim);
  const float pos = static_cast<float>(positions[t]);
  const int slot = slots[t];
  const size_t head_stride = static_cast<size_t>(block_size) * head_dim;
  bf16* k_block = CacheSlotK(kv_layer, slot, block_size, kv_heads, head_dim);
  bf16* v_block = k_block + kv_heads * head_stride;
  // Rotated pairs of q and k heads.
  // grid.y splits a token's rotations and V copies over several blocks: one block per token
  // left a batch-1 decode step with 32 SMs' worth of work on one SM.
  const int stride = gridDim.y * blockDim.x;
  for (int idx = blockIdx.y * blockDim.x + threadIdx.x; idx < (heads + kv_heads) * half;
       idx += stride) {
    const int h = idx / half;
    const int i = idx % half;
    const int i0 = interleaved ? 2 * i : i;
    const int i1 = interleaved ? 2 * i + 1 : i + half;
    const int base = h * head_dim;  // q heads, then k heads right after them
    float a = row[base + i0];
    float b = row[base + i1];
    if (bias) {
      a += bias[base + i0];
      b += bias[base + i1];
    }
    float r0 = a, r1 = b;
    RopeRotate(pos, inv_freq[i], r0, r1);
    if (h < heads) {
      float* q = q_out + static_cast<size_t>(t) * q_dim + base;
      q[i0] = r0 * q_scale;
      q[i1] = r1 * q_scale;
    } else {
      bf16* k = k_block + (h - heads) * head_stride;
      k[i0] = __float2bfloat16(r0);
      k[i1] = __float2bfloat16(r1);
    }
  }
  for (int idx = blockIdx.y * blockDim.x + threadIdx.x; idx < kv_dim; idx += stride) {
    const int off = q_dim + kv_dim + idx;
    float v = row[off];
    if (bias) v += bias[off];
    v_block[(idx / head_dim) * head_stride + idx % head_dim] = __float2bfloat16(v);
  }
}

__global__ void SiluMulKernel(const float* gate_up, int ffn, bf16* out) {
  const int t = blockIdx.x;
  const float* g = gate_up + static_cast<size_t>(t) * 2 * ffn;
  const float* u = g + ffn;
  bf16* o = out + static_cast<size_t>(t) * ffn;
  for (int i = blockIdx.y * blockDim.x + threadIdx.x; i < ffn; i += gridDim.y * blockDim.x) {
    const float x = g[i];
    o[i] = __float2bfloat16(x / (1.0f + __expf(-x)) * u[i]);
  }
}

constexpr int kKeyTile = 32;  // keys per shared-memory tile: one per lane in the score pass
constexpr int kAttnThreads = 128;

template <int HD, int RPW>
constexpr size_t AttnSmemBytes() {
  return (static_cast<size_t>(4 * RPW) * HD + 4 * RPW * kKeyTile) * sizeof(float) +
         static_cast<size_t>(kKeyTile) * (HD + 2) * sizeof(bf16) +
         static_cast<size_t>(kKeyTile) * HD * sizeof(bf16);
}

// grid: (items, kv_heads). Warp w owns query rows [w * RPW, (w + 1) * RPW) of the tile; row r
// is token r / G, head r % G of the KV head's group of G query heads.
template <int HD, int RPW>
__global__ void __launch_bounds__(kAttnThreads) AttentionKernel(AttnArgs a) {
  constexpr int R = 4 * RPW;
  constexpr int DPL = HD / 32;  // output dims per lane
  constexpr int KS = HD + 2;    // padded key row: lanes reading different keys hit distinct banks
  extern __shared__ __align__(16) unsigned char smem[];
  float* qs = reinterpret_cast<float*>(smem);             // [R][HD]
  float* ps = qs + R * HD;                                // [R][kKeyTile]
  bf16* ks = reinterpret_cast<bf16*>(ps + R * kKeyTile);  // [kKeyTile][KS]
  bf16* vs = ks + kKeyTile * KS;                          // [kKeyTile][HD]

  const AttnItem it = a.items[blockIdx.x];
  const int kvh = blockIdx.y;
  const int group = a.heads / a.kv_heads;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int nrows = it.q_count * group;
  const int q_dim = a.heads * HD;

  for (int idx = threadIdx.x; idx < R * HD; idx += kAttnThreads) {
    const int r = idx / HD;
    float v = 0.0f;
    if (r < nrows) {
      const int tok = it.q_begin + r / group;
      const int h = kvh * group + r % group;
      v = a.q[static_cast<size_t>(tok) * q_dim + h * HD + idx % HD];
    }
    qs[idx] = v;
  }

  float m[RPW], l[RPW], acc[RPW][DPL];
  int qpos[RPW];
  bool valid[RPW];
#pragma unroll
  for (int i = 0; i < RPW; ++i) {
    const int r = warp * RPW + i;
    valid[i] = r < nrows;
    qpos[i] = it.q_pos0 + r / group;
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int d = 0; d < DPL; ++d) acc[i][d] = 0.0f;
  }

  const size_t head_stride = static_cast<size_t>(a.block_size) * HD;
  const size_t block_stride = 2 * static_cast<size_t>(a.kv_heads) * head_stride;
  const size_t v_offset = static_cast<size_t>(a.kv_heads) * head_stride;
  const bf16* kv = reinterpret_cast<const bf16*>(a.kv);
  const int window = a.sliding_window;

  // K/V tiles are double-buffered through registers: the next tile's loads (block-table
  // lookup, then 16-byte K and V reads) are in flight while this tile is computed.
  constexpr int kVecPerRow = HD / 8;  // 16-byte vectors per key row
  constexpr int kLoads = kKeyTile * kVecPerRow / kAttnThreads;
  static_assert(kKeyTile * kVecPerRow % kAttnThreads == 0, "tile loads must divide evenly");
  uint4 k_next[kLoads], v_next[kLoads];
  auto fetch = [&](int t0) {
#pragma unroll
    for (int li = 0; li < kLoads; ++li) {
      const int idx = threadIdx.x + li * kAttnThreads;
      const int p = t0 + idx / kVecPerRow;
      k_next[li] = make_uint4(0, 0, 0, 0);
      v_next[li] = make_uint4(0, 0, 0, 0);
      if (p < it.kv_end) {
        const int block = a.block_tables[it.bt_offset + p / a.block_size];
        const bf16* base = kv + static_cast<size_t>(block) * block_stride + kvh * head_stride +
                           static_cast<size_t>(p % a.block_size) * HD;
        k_next[li] = reinterpret_cast<const uint4*>(base)[idx % kVecPerRow];
        v_next[li] = reinterpret_cast<const uint4*>(base + v_offset)[idx % kVecPerRow];
      }
    }
  };
  fetch(it.kv_begin);

  for (int t0 = it.kv_begin; t0 < it.kv_end; t0 += kKeyTile) {
    const int len = min(kKeyTile, it.kv_end - t0);
    __syncthreads();  // the previous tile is consumed (and, the first time, Q is loaded)
#pragma unroll
    for (int li = 0; li < kLoads; ++li) {
      const int idx = threadIdx.x + li * kAttnThreads;
      const int j = idx / kVecPerRow;
      const int c = idx % kVecPerRow;
      uint32_t* kd = reinterpret_cast<uint32_t*>(ks + j * KS + c * 8);
      kd[0] = k_next[li].x;
      kd[1] = k_next[li].y;
      kd[2] = k_next[li].z;
      kd[3] = k_next[li].w;
      reinterpret_cast<uint4*>(vs + j * HD)[c] = v_next[li];
    }
    __syncthreads();
    if (t0 + kKeyTile < it.kv_end) fetch(t0 + kKeyTile);

    // Scores: lane = key.
    float s[RPW];
#pragma unroll
    for (int i = 0; i < RPW; ++i) s[i] = 0.0f;
    const bf16* krow = ks + lane * KS;
#pragma unroll 8
    for (int d = 0; d < HD; d += 2) {
      const float2 k2 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(krow + d));
#pragma unroll
      for (int i = 0; i < RPW; ++i) {
        const float2 q2 = *reinterpret_cast<const float2*>(qs + (warp * RPW + i) * HD + d);
        s[i] += q2.x * k2.x + q2.y * k2.y;
      }
    }
    const int kp = t0 + lane;
#pragma unroll
    for (int i = 0; i < RPW; ++i) {
      const bool ok =
          valid[i] && lane < len && kp <= qpos[i] && (window <= 0 || kp > qpos[i] - window);
      const float sv = ok ? s[i] : -INFINITY;
      const float m_new = fmaxf(m[i], WarpMax(sv));
      const float p = m_new == -INFINITY ? 0.0f : __expf(sv - m_new);
      const float alpha = m_new == -INFINITY ? 1.0f : __expf(m[i] - m_new);
      l[i] = l[i] * alpha + WarpSum(p);
      m[i] = m_new;
      ps[(warp * RPW + i) * kKeyTile + lane] = p;
#pragma unroll
      for (int d = 0; d < DPL; ++d) acc[i][d] *= alpha;
    }
    __syncwarp();

    // Values: lane = output dims [lane * DPL, (lane + 1) * DPL).
    for (int j = 0; j < len; ++j) {
      float v[DPL];
      const bf16* vrow = vs + j * HD + lane * DPL;
      if constexpr (DPL == 1) {
        v[0] = __bfloat162float(vrow[0]);
      } else {
#pragma unroll
        for (int d = 0; d < DPL; d += 2) {
          const float2 v2 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(vrow + d));
          v[d] = v2.x;
          v[d + 1] = v2.y;
        }
      }
#pragma unroll
      for (int i = 0; i < RPW; ++i) {
        const float p = ps[(warp * RPW + i) * kKeyTile + j];
#pragma unroll
        for (int d = 0; d < DPL; ++d) acc[i][d] += p * v[d];
      }
    }
    __syncwarp();
  }

#pragma unroll
  for (int i = 0; i < RPW; ++i) {
    if (!valid[i]) continue;
    const int r = warp * RPW + i;
    const int tok = it.q_begin + r / group;
    const int h = kvh * group + r % group;
    if (it.num_chunks == 1) {
      const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
      bf16* o =
          reinterpret_cast<bf16*>(a.out) + static_cast<size_t>(tok) * q_dim + h * HD + lane * DPL;
#pragma unroll
      for (int d = 0; d < DPL; ++d) o[d] = __float2bfloat16(acc[i][d] * inv);
    } else {
      const size_t pi = (static_cast<size_t>(tok) * a.heads + h) * a.max_chunks + it.chunk;
      float* o = a.part_acc + pi * HD + lane * DPL;
#pragma unroll
      for (int d = 0; d < DPL; ++d) o[d] = acc[i][d];
      if (lane == 0) {
        a.part_ml[pi * 2] = m[i];
        a.part_ml[pi * 2 + 1] = l[i];
      }
    }
  }
}

template <int HD>
__global__ void AttentionCombineKernel(AttnArgs a, const int32_t* token_chunks) {
  GridLaunchDependents();  // the o projection's GEMV may start fetching its weights
  const int t = blockIdx.x;
  const int h = blockIdx.y;
  const int chunks = token_chunks[t];
  if (chunks <= 1) return;
  const size_t base = (static_cast<size_t>(t) * a.heads + h) * a.max_chunks;
  // One pass with a running max, the loads of kBatch chunks in flight at once: the two loops
  // that waited on one L2 load (and a branch on it) per chunk had made this ~4.4 us kernel a
  // string of round trips (batch 1, 8 chunks).
  constexpr int kBatch = 8;
  const float2* ml = reinterpret_cast<const float2*>(a.part_ml) + base;
  for (int d = threadIdx.x; d < HD; d += blockDim.x) {
    const float* acc = a.part_acc + base * HD + d;
    float m = -INFINITY, sum = 0.0f, o = 0.0f;
    for (int c0 = 0; c0 < chunks; c0 += kBatch) {
      float2 v[kBatch];
      float x[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const bool ok = c0 + j < chunks;
        v[j] = ok ? ml[c0 + j] : make_float2(-INFINITY, 0.0f);
        x[j] = ok ? acc[static_cast<size_t>(c0 + j) * HD] : 0.0f;
      }
      float mb = m;
#pragma unroll
      for (int j = 0; j < kBatch; ++j) mb = fmaxf(mb, v[j].x);
      if (mb == -INFINITY) continue;
      const float r = m == -INFINITY ? 0.0f : __expf(m - mb);
      sum *= r;
      o *= r;
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const float w = v[j].x == -INFINITY ? 0.0f : __expf(v[j].x - mb);
        sum += w * v[j].y;
        o += w * x[j];
      }
      m = mb;
    }
    reinterpret_cast<bf16*>(a.out)[static_cast<size_t>(t) * a.heads * HD + h * HD + d] =
        __float2bfloat16(sum > 0.0f ? o / sum : 0.0f);
  }
}

template <int HD, int RPW>
void LaunchAttentionT(const AttnArgs& args, cudaStream_t stream) {
  constexpr size_t smem = AttnSmemBytes<HD, RPW>();
  static bool configured = false;  // the engine loop is the one caller
  if (!configured) {
    cudaFuncSetAttribute(AttentionKernel<HD, RPW>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         static_cast<int>(smem));
    configured = true;
  }
  dim3 grid(args.num_items, args.kv_heads);
  AttentionKernel<HD, RPW><<<grid, kAttnThreads, smem, stream>>>(args);
}

template <int HD>
void LaunchAttentionHd(const AttnArgs& args, cudaStream_t stream) {
  switch (args.rows_per_warp) {
    case 1:
      return LaunchAttentionT<HD, 1>(args, stream);
    case 2:
      return LaunchAttentionT<HD, 2>(args, stream);
    case 4:
      return LaunchAttentionT<HD, 4>(args, stream);
    case 8:
      return LaunchAttentionT<HD, 8>(args, stream);
    default:
      return LaunchAttentionT<HD, 16>(args, stream);
  }
}

__device__ __forceinline__ uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void FillRandomBf16Kernel(bf16* dst, size_t n, float scale, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint64_t h = SplitMix64(seed ^ (i * 0x2545f4914f6cdd1dull));
    const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    dst[i] = __float2bfloat16((2.0f * u - 1.0f) * scale);
  }
}

__global__ void FillF32Kernel(float* dst, size_t n, float value) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = value;
  }
}

}  // namespace

bool AttentionSupportsHeadDim(int head_dim) {
  return head_dim == 32 || head_dim == 64 || head_dim == 128 || head_dim == 256;
}

void LaunchEmbed(const uint16_t* table, const int32_t* ids, int num_tokens, int hidden, float scale,
                 float* x, cudaStream_t stream) {
  EmbedKernel<<<num_tokens, 256, 0, stream>>>(reinterpret_cast<const bf16*>(table), ids, hidden,
                                              scale, x);
}

void LaunchHeadRmsNorm(float* qkv, const float* q_weight, const float* k_weight, int tokens,
                       int heads, int kv_heads, int head_dim, int stride, float eps,
                       cudaStream_t stream) {
  const int warps = tokens * (heads + kv_heads);
  if (warps == 0) return;
  HeadRmsNormKernel<<<(warps + 3) / 4, 128, 0, stream>>>(qkv, q_weight, k_weight, tokens, heads,
                                                         kv_heads, head_dim, stride, eps);
}

void LaunchRmsNorm(const float* x, const int32_t* rows, int num_rows, int hidden,
                   const float* weight, float eps, uint16_t* out, cudaStream_t stream) {
  const int n4 = hidden / 4;
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(weight) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(out) % 4 == 0;
  if (hidden % 4 == 0 && aligned && n4 <= kNormVecs * 1024) {
    const int threads = std::max(32, (n4 + kNormVecs * 32 - 1) / (kNormVecs * 32) * 32);
    RmsNormVecKernel<<<num_rows, threads, 0, stream>>>(x, rows, hidden, weight, eps,
                                                       reinterpret_cast<bf16*>(out));
    return;
  }
  RmsNormKernel<<<num_rows, hidden >= 2048 ? 1024 : 256, 0, stream>>>(x, rows, hidden, weight, eps,
                                                                      reinterpret_cast<bf16*>(out));
}

void LaunchQkvRope(const float* qkv, const float* bias, const int32_t* positions,
                   const int32_t* slots, int num_tokens, int heads, int kv_heads, int head_dim,
                   const float* inv_freq, bool interleaved, float q_scale, float* q_out,
                   uint16_t* kv_layer, int block_size, cudaStream_t stream) {
  constexpr int kThreads = 128;
  const int split = std::max(1, std::min(32, ((heads + kv_heads) * head_dim / 2) / kThreads));
  QkvRopeKernel<<<dim3(num_tokens, split), kThreads, 0, stream>>>(
      qkv, bias, positions, slots, heads, kv_heads, head_dim, inv_freq, interleaved, q_scale, q_out,
      reinterpret_cast<bf16*>(kv_layer), block_size);
}

void LaunchSiluMul(const float* gate_up, int num_tokens, int ffn, uint16_t* out,
                   cudaStream_t stream) {
  dim3 grid(num_tokens, (ffn + 1023) / 1024);
  SiluMulKernel<<<grid, 256, 0, stream>>>(gate_up, ffn, reinterpret_cast<bf16*>(out));
}

void LaunchAttention(const AttnArgs& args, cudaStream_t stream) {
  if (args.num_items == 0) return;
  if (args.flash && LaunchFlashAttention(args, stream)) return;
  switch (args.head_dim) {
    case 32:
      return LaunchAttentionHd<32>(args, stream);
    case 64:
      return LaunchAttentionHd<64>(args, stream);
    case 256:
      return LaunchAttentionHd<256>(args, stream);
    default:
      return LaunchAttentionHd<128>(args, stream);
  }
}

void LaunchAttentionCombine(const AttnArgs& args, const int32_t* token_chunks, int num_tokens,
                            cudaStream_t stream) {
  dim3 grid(num_tokens, args.heads);
  switch (args.head_dim) {
    case 32:
      return AttentionCombineKernel<32><<<grid, 32, 0, stream>>>(args, token_chunks);
    case 64:
      return AttentionCombineKernel<64><<<grid, 64, 0, stream>>>(args, token_chunks);
    case 256:
      return AttentionCombineKernel<256><<<grid, 256, 0, stream>>>(args, token_chunks);
    default:
      return AttentionCombineKernel<128><<<grid, 128, 0, stream>>>(args, token_chunks);
  }
}

void LaunchFillRandomBf16(uint16_t* dst, size_t n, float scale, uint64_t seed,
                          cudaStream_t stream) {
  FillRandomBf16Kernel<<<1024, 256, 0, stream>>>(reinterpret_cast<bf16*>(dst), n, scale, seed);
}

void LaunchFillF32(float* dst, size_t n, float value, cudaStream_t stream) {
  FillF32Kernel<<<256, 256, 0, stream>>>(dst, n, value);
}

}  // namespace jisu::cuda
