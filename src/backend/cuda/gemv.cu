// Small-batch (1..8 tokens) products with BF16 weights, the decode step's main cost: every
// weight byte is read once per step, so these kernels are built to keep HBM busy (each warp
// streams two weight rows with several 16-byte loads in flight per lane; activations come from
// L1) and to absorb the elementwise work around them, which at batch 1 costs more in launch
// gaps than in bytes:
//
// - RMSNorm: y = W (x * g * r) = r * (W (x * g)) with r = rsqrt(mean(x^2) + eps) one scalar a
//   token. The kernel that writes the residual x (embedding, or the residual GEMV below) also
//   writes u = bf16(x * g) for the next norm's weight g, and per block the partial sums of x^2;
//   the next GEMV reads u like any activation and multiplies its dot products by r, computed
//   from those partials. No norm kernel, no second pass over x.
// - QKV: a warp's two rows are a RoPE pair of one q/k head (or two v rows), so the epilogue
//   adds the bias, rotates, scales q and writes k and v straight into the paged cache.
// - Gate/up: a warp's two rows are gate_i and up_i, so the epilogue writes silu(g) * up.
// - Residual: the epilogue adds into x (and writes u and the x^2 partials for the next norm).
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cuda/kernels.h"
#include "backend/cuda/reduce.cuh"

namespace jisu::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 8;  // units (row pairs) per block and grid-stride step
constexpr int kMaxBlocks = 4096;

// Warps per unit (each streams a contiguous slice of k): more loads in flight early in a
// kernel whose grid is only a few waves deep, and for the QKV projection (3072 units) a grid
// that fills the last wave (1536 blocks instead of 768 at 4 blocks an SM on 132 SMs). Measured
// on an H200 at batch 1 / 2 (8B shape, step ms): one split for all, 1 / 2 / 4 warps: 5.18 / 5.02
// / 5.40 (previous session); per op, QKV / o+down / gate+up = 2/2/2: 4.42-4.46 / 4.71-4.72,
// 4/2/2: 4.40-4.50 / 4.69-4.78, 4/2/4: 4.37-4.42 / 4.65-4.68, 4/4/2: 4.51-4.53, 4/1/2: 4.64-4.66,
// 4/2/1: 4.48-4.51 (bench/results/2026-12-01-cuda-h200-attn-tuner.md).
constexpr int KSplit(GemvOp op) { return op == GemvOp::kQkvRope || op == GemvOp::kSwiGlu ? 4 : 2; }

// Weights are read once per step: keep them out of L1, so
// the activations (re-read by every warp) stay cached.
__device__ __forceinline__ uint4 LoadStream(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// One round of a warp's weight loads: U 16-byte pieces of each of its two rows per lane.
template <int U>
__device__ __forceinline__ void LoadRound(const uint4* wa, const uint4* wb, int i0, int i_end,
                                          uint4 (&w0)[U], uint4 (&w1)[U]) {
#pragma unroll
  for (int j = 0; j < U; ++j) {
    const int i = i0 + 32 * j;
    if (i < i_end) {
      w0[j] = LoadStream(wa + i);
      w1[j] = LoadStream(wb + i);
    } else {
      w0[j] = w1[j] = make_uint4(0, 0, 0, 0);
    }
  }
}

__device__ __forceinline__ void Dot8(const uint4& w, const uint4& x, float& acc) {
  const __nv_bfloat162* wp = reinterpret_cast<const __nv_bfloat162*>(&w);
  const __nv_bfloat162* xp = reinterpret_cast<const __nv_bfloat162*>(&x);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 wf = __bfloat1622float2(wp[j]);
    const float2 xf = __bfloat1622float2(xp[j]);
    acc = fmaf(wf.x, xf.x, acc);
    acc = fmaf(wf.y, xf.y, acc);
  }
}

// The two weight rows of unit u.
template <GemvOp kOp>
__device__ __forceinline__ void UnitRows(const GemvArgs& a, int u, int& ra, int& rb, int& pair) {
  pair = -1;
  switch (kOp) {
    case GemvOp::kSwiGlu:
      ra = u;
      rb = a.n + u;
      return;
    case GemvOp::kQkvRope: {
      const int half = a.head_dim / 2;
      const int qk_units = (a.heads + a.kv_heads) * half;
      if (u < qk_units) {
        const int h = u / half;
        const int i = u % half;
        const int base = h * a.head_dim;
        ra = base + (a.interleaved ? 2 * i : i);
        rb = base + (a.interleaved ? 2 * i + 1 : i + half);
        pair = i;
      } else {
        ra = (a.heads + a.kv_heads) * a.head_dim + 2 * (u - qk_units);
        rb = ra + 1;
      }
      return;
    }
    default:
      ra = 2 * u;
      rb = 2 * u + 1;
      return;
  }
}

// Each op its own instantiation (registers for its epilogue only). Four blocks (32 warps) per
// SM with four loads in flight per row and lane: on an H200 at batch 1 (8B shape) 4.78-4.80 ms
// a step, against 5.08-5.10 with eight loads and two blocks per SM (113 registers) and
// 5.15-5.16 with six and three. More tokens need the registers (two blocks per SM).
template <int T, int U, int KS, GemvOp kOp>
__global__ void __launch_bounds__(kWarps * 32, T <= 2 ? 4 : 2) GemvKernel(GemvArgs a) {
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  __shared__ float ss_warp[kWarps][T];
  // The next kernel of the step may launch now: it only prefetches its weights until this
  // grid has finished (its griddepcontrol.wait).
  GridLaunchDependents();
  const int kv = a.k / 8;
  const uint4* xv = reinterpret_cast<const uint4*>(a.x);
  float ss[T];
#pragma unroll
  for (int t = 0; t < T; ++t) ss[t] = 0.0f;

  // KS warps share a unit, each taking a contiguous slice of k, so that short, wide matrices
  // (o and down projections: 2048 units) still put enough loads in flight.
  constexpr int kUnitsPerBlock = kWarps / KS;
  const int part = warp % KS;
  const int per = (kv + KS - 1) / KS;
  const int i_begin = part * per;
  const int i_end = min(kv, i_begin + per);
  __shared__ float red[KS > 1 ? kWarps : 1][2][T];
  // Weights do not depend on the previous kernel: the first round of this warp's loads is
  // issued before waiting for it (programmatic dependent launch), hiding the launch gap.
  uint4 w0[U], w1[U];
  bool preloaded = false;
  {
    const int u = blockIdx.x * kUnitsPerBlock + warp / KS;
    if (u < a.units) {
      int ra, rb, pair;
      UnitRows<kOp>(a, u, ra, rb, pair);
      const uint4* wa = reinterpret_cast<const uint4*>(a.w) + static_cast<size_t>(ra) * kv;
      const uint4* wb =
          reinterpret_cast<const uint4*>(a.w) + static_cast<size_t>(rb < a.rows ? rb : ra) * kv;
      LoadRound<U>(wa, wb, i_begin + lane, i_end, w0, w1);
      preloaded = true;
    }
  }
  GridDependencyWait();
  // r per token from the producer's partial sums of squares (512 of them after the o and down
  // projections), a lane's loads in flight at once. One token: every warp sums them itself,
  // since a block barrier behind one warp's sums had been the QKV kernel's largest stall (15%
  // of its samples, Nsight Compute). More tokens: warp t sums token t's, fewer loads at a time
  // and r through shared memory (registers: at two tokens the one-token way spills at 64).
  __shared__ float inv_rms_shared[T];
  float inv_rms_one = 1.0f;
  if (a.ss_in != nullptr) {
    constexpr int kBatch = T == 1 ? 16 : 4;
    for (int t = T == 1 ? 0 : warp; t < T; t += kWarps) {
      float s = 0.0f;
      for (int p0 = lane; p0 < a.ss_in_parts; p0 += 32 * kBatch) {
        float v[kBatch];
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const int p = p0 + 32 * j;
          v[j] = p < a.ss_in_parts ? a.ss_in[p * T + t] : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < kBatch; ++j) s += v[j];
      }
      const float r = rsqrtf(WarpSum(s) / static_cast<float>(a.k) + a.eps);
      if constexpr (T == 1) {
        inv_rms_one = r;
      } else if (lane == 0) {
        inv_rms_shared[t] = r;
      }
    }
    if constexpr (T > 1) __syncthreads();
  }
  for (int ub = blockIdx.x * kUnitsPerBlock; ub < a.units; ub += gridDim.x * kUnitsPerBlock) {
    const int u = ub + warp / KS;
    const bool active = u < a.units;
    int ra = 0, rb = 0, pair = -1;
    if (active) UnitRows<kOp>(a, u, ra, rb, pair);
    const bool has_b = rb < a.rows;
    const uint4* wa = reinterpret_cast<const uint4*>(a.w) + static_cast<size_t>(ra) * kv;
    const uint4* wb =
        reinterpret_cast<const uint4*>(a.w) + static_cast<size_t>(has_b ? rb : ra) * kv;
    // Lane t's rotation for token t, computed while this unit's weight loads are in flight
    // rather than after the dot products (positions are step metadata).
    float rope_c = 1.0f, rope_s = 0.0f;
    if constexpr (kOp == GemvOp::kQkvRope) {
      if (active && pair >= 0 && part == 0 && lane < T) {
        RopeCosSin(static_cast<float>(a.positions[lane]), a.inv_freq[pair], rope_c, rope_s);
      }
    }
    float acc[2][T];
#pragma unroll
    for (int t = 0; t < T; ++t) acc[0][t] = acc[1][t] = 0.0f;
    for (int i0 = i_begin + lane; active && i0 < i_end; i0 += 32 * U) {
      if (!preloaded) LoadRound<U>(wa, wb, i0, i_end, w0, w1);
      preloaded = false;
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const int i = i0 + 32 * j;
        if (i >= i_end) break;
#pragma unroll
        for (int t = 0; t < T; ++t) {
          const uint4 x = __ldg(xv + static_cast<size_t>(t) * kv + i);
          Dot8(w0[j], x, acc[0][t]);
          Dot8(w1[j], x, acc[1][t]);
        }
      }
    }
    preloaded = false;  // the preloaded round belonged to this unit, whether used or not
#pragma unroll
    for (int t = 0; t < T; ++t) {
      acc[0][t] = WarpSum(acc[0][t]);
      acc[1][t] = WarpSum(acc[1][t]);
    }
    if constexpr (KS > 1) {
      if (lane == 0) {
#pragma unroll
        for (int t = 0; t < T; ++t) {
          red[warp][0][t] = acc[0][t];
          red[warp][1][t] = acc[1][t];
        }
      }
      __syncthreads();
      if (part == 0) {
#pragma unroll
        for (int t = 0; t < T; ++t) {
          for (int p = 1; p < KS; ++p) {
            acc[0][t] += red[warp + p][0][t];
            acc[1][t] += red[warp + p][1][t];
          }
        }
      }
      __syncthreads();
    }
    if (!active || part != 0) continue;
      // Lane t finishes token t.
#pragma unroll
    for (int t = 0; t < T; ++t) {
      if (lane != t) continue;
      const float r = T == 1 ? inv_rms_one : (a.ss_in != nullptr ? inv_rms_shared[t] : 1.0f);
      float va = acc[0][t] * r;
      float vb = acc[1][t] * r;
      switch (kOp) {
        case GemvOp::kStore:
        case GemvOp::kAccumulate: {
          float* y = a.y + static_cast<size_t>(t) * a.rows;
          constexpr bool add = kOp == GemvOp::kAccumulate;
          va += add ? y[ra] : 0.0f;
          y[ra] = va;
          if (has_b) {
            vb += add ? y[rb] : 0.0f;
            y[rb] = vb;
          }
          if (a.u_out != nullptr) {
            bf16* uo = reinterpret_cast<bf16*>(a.u_out) + static_cast<size_t>(t) * a.rows;
            uo[ra] = __float2bfloat16(va * a.u_weight[ra]);
            if (has_b) uo[rb] = __float2bfloat16(vb * a.u_weight[rb]);
          }
          ss[t] += va * va + (has_b ? vb * vb : 0.0f);
          break;
        }
        case GemvOp::kSwiGlu: {
          const float act = va / (1.0f + __expf(-va)) * vb;
          reinterpret_cast<bf16*>(a.act)[static_cast<size_t>(t) * a.n + u] = __float2bfloat16(act);
          break;
        }
        case GemvOp::kQkvRope: {
          if (a.bias != nullptr) {
            va += a.bias[ra];
            vb += a.bias[rb];
          }
          const int q_dim = a.heads * a.head_dim;
          const int kv_dim = a.kv_heads * a.head_dim;
          const size_t head_stride = static_cast<size_t>(a.block_size) * a.head_dim;
          bf16* k_block = CacheSlotK(reinterpret_cast<bf16*>(a.kv_layer), a.slots[t], a.block_size,
                                     a.kv_heads, a.head_dim);
          if (pair >= 0) {
            float r0 = va, r1 = vb;
            RopeApply(rope_c, rope_s, r0, r1);
            if (ra < q_dim) {
              float* q = a.q_out + static_cast<size_t>(t) * q_dim;
              q[ra] = r0 * a.q_scale;
              q[rb] = r1 * a.q_scale;
            } else {
              const int h = (ra - q_dim) / a.head_dim;  // ra and rb lie in k head h
              bf16* k = k_block + h * head_stride;
              k[ra - q_dim - h * a.head_dim] = __float2bfloat16(r0);
              k[rb - q_dim - h * a.head_dim] = __float2bfloat16(r1);
            }
          } else {
            bf16* v_block = k_block + a.kv_heads * head_stride;
            const int ia = ra - q_dim - kv_dim;
            const int ib = rb - q_dim - kv_dim;
            v_block[(ia / a.head_dim) * head_stride + ia % a.head_dim] = __float2bfloat16(va);
            v_block[(ib / a.head_dim) * head_stride + ib % a.head_dim] = __float2bfloat16(vb);
          }
          break;
        }
      }
    }
  }
  if (a.ss_out != nullptr) {
    // This block's partial sums of squares of the rows it wrote (lane t holds token t's).
#pragma unroll
    for (int t = 0; t < T; ++t) {
      if (lane == t) ss_warp[warp][t] = ss[t];
    }
    __syncthreads();
    if (threadIdx.x < T) {
      float s = 0.0f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) s += ss_warp[w][threadIdx.x];
      a.ss_out[blockIdx.x * T + threadIdx.x] = s;
    }
  }
}

template <int T>
void LaunchT(const GemvArgs& a, cudaStream_t stream) {
  constexpr int U = 4;  // loads in flight per row and lane
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(GemvBlocks(a));
  config.blockDim = dim3(kWarps * 32);
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = a.programmatic_launch ? 1 : 0;
  config.attrs = attr;
  config.numAttrs = 1;
  switch (a.op) {
    case GemvOp::kStore:
      cudaLaunchKernelEx(&config, GemvKernel<T, U, KSplit(GemvOp::kStore), GemvOp::kStore>, a);
      break;
    case GemvOp::kAccumulate:
      cudaLaunchKernelEx(&config,
                         GemvKernel<T, U, KSplit(GemvOp::kAccumulate), GemvOp::kAccumulate>, a);
      break;
    case GemvOp::kSwiGlu:
      cudaLaunchKernelEx(&config, GemvKernel<T, U, KSplit(GemvOp::kSwiGlu), GemvOp::kSwiGlu>, a);
      break;
    case GemvOp::kQkvRope:
      cudaLaunchKernelEx(&config, GemvKernel<T, U, KSplit(GemvOp::kQkvRope), GemvOp::kQkvRope>, a);
      break;
  }
}

__global__ void EmbedNormInputKernel(const bf16* table, const int32_t* ids, int hidden, float scale,
                                     const float* g, float* x, bf16* u, float* ss) {
  __shared__ float scratch[32];
  const int t = blockIdx.x;
  const bf16* row = table + static_cast<size_t>(ids[t]) * hidden;
  float s = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    const float v = __bfloat162float(row[i]) * scale;
    x[static_cast<size_t>(t) * hidden + i] = v;
    u[static_cast<size_t>(t) * hidden + i] = __float2bfloat16(v * g[i]);
    s += v * v;
  }
  s = WarpSum(s);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) total += scratch[w];
    // One part per token, in the [parts][T] layout with one part: ss[t].
    ss[t] = total;
  }
}

}  // namespace

int GemvUnits(const GemvArgs& a) {
  switch (a.op) {
    case GemvOp::kSwiGlu:
      return a.n;
    case GemvOp::kQkvRope:
      return (a.heads + a.kv_heads) * (a.head_dim / 2) + a.kv_heads * a.head_dim / 2;
    default:
      return (a.rows + 1) / 2;
  }
}

int GemvBlocks(const GemvArgs& a) {
  const int per_block = kWarps / KSplit(a.op);
  const int units = GemvUnits(a);
  return std::max(1, std::min(kMaxBlocks, (units + per_block - 1) / per_block));
}

bool LaunchGemvOp(const GemvArgs& args, cudaStream_t stream) {
  if (args.k % 8 != 0 || args.tokens < 1 || args.tokens > kMaxGemvTokens) return false;
  if (args.op == GemvOp::kQkvRope && args.head_dim % 2 != 0) return false;
  GemvArgs a = args;
  a.units = GemvUnits(a);
  switch (a.tokens) {
    case 1:
      LaunchT<1>(a, stream);
      break;
    case 2:
      LaunchT<2>(a, stream);
      break;
    case 3:
      LaunchT<3>(a, stream);
      break;
    case 4:
      LaunchT<4>(a, stream);
      break;
    case 5:
      LaunchT<5>(a, stream);
      break;
    case 6:
      LaunchT<6>(a, stream);
      break;
    case 7:
      LaunchT<7>(a, stream);
      break;
    default:
      LaunchT<8>(a, stream);
      break;
  }
  return true;
}

bool LaunchGemv(const uint16_t* w, int n, int k, const uint16_t* x, int tokens, float* y,
                bool accumulate, cudaStream_t stream, bool programmatic_launch) {
  GemvArgs a;
  a.programmatic_launch = programmatic_launch;
  a.op = accumulate ? GemvOp::kAccumulate : GemvOp::kStore;
  a.w = w;
  a.rows = n;
  a.n = n;
  a.k = k;
  a.x = x;
  a.tokens = tokens;
  a.y = y;
  return LaunchGemvOp(a, stream);
}

void LaunchEmbedNormInput(const uint16_t* table, const int32_t* ids, int num_tokens, int hidden,
                          float scale, const float* g, float* x, uint16_t* u, float* ss,
                          cudaStream_t stream) {
  EmbedNormInputKernel<<<num_tokens, 256, 0, stream>>>(reinterpret_cast<const bf16*>(table), ids,
                                                       hidden, scale, g, x,
                                                       reinterpret_cast<bf16*>(u), ss);
}

}  // namespace jisu::cuda
