// FlashAttention-2-style kernels on mma.sync (BF16 in, FP32 accumulate) over the paged cache.
// Scores, probabilities and the output stay in registers: a warp holds 16 query rows, computes
// S = Q K^T for a tile of keys with m16n8k16 MMAs, applies the online softmax to its S
// fragment, reuses that fragment as the A operand of O += P V, and never writes S or P to
// memory. K/V tiles of 64 keys are gathered from the paged cache with cp.async into a
// two-stage shared-memory ring, so the next tile's loads overlap this tile's math.
//
// Two work splits share the tile code:
// - prefill tiles: 64 query rows (tokens x heads of one KV group) per block, warp w owns rows
//   [16w, 16w + 16) and all 64 keys of each tile;
// - decode items: the group's query rows (<= 16, one token) in every warp, warp w takes keys
//   [16w, 16w + 16) of each tile (flash-decoding inside the block), and the four partial
//   softmaxes are merged at the end. K/V are read once for the whole GQA group.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/kernels.h"
#include "backend/cuda/mma.cuh"

namespace jisu::cuda {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kPrefillRows = 64;  // = AttentionRows(16): the tile Prepare builds
constexpr int kDecodeRows = 16;   // one MMA row block: GQA groups up to 16 heads

// Block shape: warps, keys per K/V tile, tiles in the cp.async ring. Prefill: four warps of
// 16 query rows, 64-key tiles, two stages (17 + 2 x 35 KB, two blocks per SM). Decode: the
// warps split each tile's keys (16 each); the decode kernel is latency-bound (Nsight Compute at
// batch 64 with 4 warps, three stages, two blocks per SM: 47% of DRAM bandwidth), so the
// variants below (LaunchDecode) trade warps for bytes in flight.
template <int W, int TK, int ST>
struct FlashShape {
  static constexpr int kWarps = W;
  static constexpr int kThreads = 32 * W;
  static constexpr int kTileKeys = TK;
  static constexpr int kStages = ST;
};
using PrefillShape = FlashShape<4, 64, 2>;

template <int HD, bool kDecode, class Shape>
struct FlashLayout {
  static constexpr int kStride = HD + 8;  // bf16; 16-byte row shift: ldmatrix is conflict-free
  static constexpr int kRows = kDecode ? kDecodeRows : kPrefillRows;
  static constexpr int kStages = Shape::kStages;
  static constexpr int kQElems = kRows * kStride;
  static constexpr int kStageElems = 2 * Shape::kTileKeys * kStride;  // K then V
  static constexpr size_t kBytes = (kQElems + kStages * static_cast<size_t>(kStageElems)) * 2;
  // The decode merge reuses the stages: per warp, 16 rows of O (f32) plus m and l.
  static_assert(Shape::kWarps * kDecodeRows * (HD + 2) * 4 <= kStages * kStageElems * 2,
                "merge buffer too big");
  static_assert(kDecode || (Shape::kWarps * 16 == kPrefillRows), "prefill: 16 rows a warp");
  static_assert(Shape::kTileKeys * (HD / 8) % Shape::kThreads == 0, "tile load split");
};

// grid: (items, kv_heads), Shape::kThreads threads.
template <int HD, bool kDecode, class Shape>
__global__ void __launch_bounds__(Shape::kThreads) FlashAttentionKernel(AttnArgs a) {
  using L = FlashLayout<HD, kDecode, Shape>;
  constexpr int kThreads = Shape::kThreads;
  constexpr int kTileKeys = Shape::kTileKeys;
  constexpr int kWarps = Shape::kWarps;
  constexpr int S = L::kStride;
  constexpr int kStages = L::kStages;
  constexpr int kWarpKeys = kDecode ? kTileKeys / kWarps : kTileKeys;  // keys of a tile per warp
  static_assert(kWarpKeys % 16 == 0, "a warp's keys make whole k16 blocks of P.V");
  constexpr int kSBlocks = kWarpKeys / 8;  // n-blocks of S
  constexpr int kOBlocks = HD / 8;         // n-blocks of O
  constexpr int kRows = L::kRows;
  extern __shared__ __align__(128) unsigned char flash_smem[];
  if constexpr (kDecode) GridLaunchDependents();  // the o projection's GEMV may prefetch
  bf16* qs = reinterpret_cast<bf16*>(flash_smem);
  bf16* stages = qs + L::kQElems;

  // Prefill items of a sequence come in increasing position order, so the last ones have the
  // most keys: start those first to shorten the tail.
  const int item = kDecode ? blockIdx.x : gridDim.x - 1 - blockIdx.x;
  const AttnItem it = a.items[item];
  const int kvh = blockIdx.y;
  const int group = a.heads / a.kv_heads;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int g = lane / 4;  // fragment row (and row + 8)
  const int t = lane % 4;  // fragment column pair
  const int nrows = it.q_count * group;
  const int q_dim = a.heads * HD;

  const size_t head_stride = static_cast<size_t>(a.block_size) * HD;
  const size_t block_stride = 2 * static_cast<size_t>(a.kv_heads) * head_stride;
  const size_t v_offset = static_cast<size_t>(a.kv_heads) * head_stride;
  const bf16* kv = reinterpret_cast<const bf16*>(a.kv);
  // Each thread copies kRun consecutive key rows of a tile (one 16-byte column of each). Tiles
  // are loaded in key order, so the thread keeps a cursor (its first key, that key's page and
  // offset) and, when the run lies in one page (block size a multiple of kRun), looks the page
  // up once and issues kRun copies at fixed strides. A table load and a division per copy had
  // made integer address arithmetic over half of the decode kernel's instructions (Nsight
  // Compute source counters, batch 64).
  constexpr int kVec = HD / 8;                  // 16-byte pieces per key row
  constexpr int kRowGroups = kThreads / kVec;   // threads per column
  constexpr int kRun = kTileKeys / kRowGroups;  // consecutive rows per thread
  static_assert(kThreads % kVec == 0 && kTileKeys % kRowGroups == 0, "tile load split");
  const int vec = threadIdx.x % kVec;
  const int run0 = threadIdx.x / kVec * kRun;  // first row of this thread's run in a tile
  const bool page_runs = a.block_size % kRun == 0;
  int cur_key = it.kv_begin + run0;
  int cur_page = cur_key / a.block_size;
  int cur_off = cur_key - cur_page * a.block_size;
  // The block table entry at the cursor, loaded one tile ahead: waiting for it right before the
  // copies had been the kernel's largest stall on global memory.
  auto table_at_cursor = [&] {
    return cur_key < it.kv_end ? a.block_tables[it.bt_offset + cur_page] : 0;
  };
  int next_block = table_at_cursor();
  auto load_tile = [&](int stage) {
    bf16* ks = stages + stage * L::kStageElems + run0 * S + vec * 8;
    bf16* vs = ks + kTileKeys * S;
    if (page_runs && cur_off % kRun == 0 && cur_key + kRun <= it.kv_end) {
      const int block = next_block;
      const bf16* src = kv + static_cast<size_t>(block) * block_stride + kvh * head_stride +
                        cur_off * HD + vec * 8;
#pragma unroll
      for (int i = 0; i < kRun; ++i) {
        CpAsync16(ks + i * S, src + i * HD, true);
        CpAsync16(vs + i * S, src + i * HD + v_offset, true);
      }
    } else {
      int key = cur_key, page = cur_page, off = cur_off;
      for (int i = 0; i < kRun; ++i) {
        const bool ok = key < it.kv_end;
        const bf16* src = kv;
        if (ok) {
          const int block = a.block_tables[it.bt_offset + page];
          src = kv + static_cast<size_t>(block) * block_stride + kvh * head_stride + off * HD +
                vec * 8;
        }
        CpAsync16(ks + i * S, src, ok);
        CpAsync16(vs + i * S, ok ? src + v_offset : kv, ok);
        ++key;
        if (++off == a.block_size) {
          off = 0;
          ++page;
        }
      }
    }
    cur_key += kTileKeys;
    cur_off += kTileKeys;
    while (cur_off >= a.block_size) {
      cur_off -= a.block_size;
      ++cur_page;
    }
    next_block = table_at_cursor();
  };
  const int num_tiles = (it.kv_end - it.kv_begin + kTileKeys - 1) / kTileKeys;
  // One commit group per tile (empty past the end), so "tile i has landed" is always "at most
  // kStages - 2 groups still pending".
#pragma unroll
  for (int st = 0; st < kStages - 1; ++st) {
    if (st < num_tiles) load_tile(st);
    CpAsyncCommit();
  }

  // Q rows (already scaled by 1/sqrt(d)) to BF16 in shared memory, then into A fragments that
  // stay in registers for the whole kernel.
  // Loads in batches of kQBatch before the stores, so that their latencies overlap.
  constexpr int kQIters = kRows * HD / 2 / kThreads;
  constexpr int kQBatch = kQIters < 8 ? kQIters : 8;
  static_assert(kRows * HD / 2 % kThreads == 0 && kQIters % kQBatch == 0, "q load split");
#pragma unroll
  for (int j0 = 0; j0 < kQIters; j0 += kQBatch) {
    float2 v[kQBatch];
#pragma unroll
    for (int j = 0; j < kQBatch; ++j) {
      const int idx = threadIdx.x + (j0 + j) * kThreads;
      const int r = idx / (HD / 2);
      const int d = idx % (HD / 2) * 2;
      v[j] = make_float2(0.0f, 0.0f);
      if (r < nrows) {
        const int tok = it.q_begin + r / group;
        const int h = kvh * group + r % group;
        v[j] =
            *reinterpret_cast<const float2*>(a.q + static_cast<size_t>(tok) * q_dim + h * HD + d);
      }
    }
#pragma unroll
    for (int j = 0; j < kQBatch; ++j) {
      const int idx = threadIdx.x + (j0 + j) * kThreads;
      *reinterpret_cast<__nv_bfloat162*>(qs + idx / (HD / 2) * S + idx % (HD / 2) * 2) =
          __floats2bfloat162_rn(v[j].x, v[j].y);
    }
  }
  __syncthreads();
  const int row0 = kDecode ? 0 : warp * 16;
  uint32_t qa[HD / 16][4];
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk) {
    Ldmatrix4(qa[kk], qs + (row0 + lane % 8 + 8 * (lane / 8 % 2)) * S + kk * 16 + 8 * (lane / 16));
  }

  // This thread's two rows: row0 + g and row0 + g + 8.
  int qpos[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) qpos[i] = it.q_pos0 + (row0 + g + 8 * i) / group;
  const int window = a.sliding_window;
  // A decode group of <= 8 heads leaves the fragment's upper rows (g + 8) empty: no softmax there.
  const bool hi_rows = !kDecode || nrows > 8;
  const int kw0 = kDecode ? warp * kWarpKeys : 0;  // this warp's first key within a tile

  float o[kOBlocks][4];
#pragma unroll
  for (int nb = 0; nb < kOBlocks; ++nb) o[nb][0] = o[nb][1] = o[nb][2] = o[nb][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.0f, 0.0f};  // this thread's share of the row sums (quad-reduced at the end)

  for (int tile = 0; tile < num_tiles; ++tile) {
    const int t0 = it.kv_begin + tile * kTileKeys;
    CpAsyncWait<kStages - 2>();
    // This tile has landed for every thread, and every warp is done with the stage the next
    // load overwrites (it held tile - 1).
    __syncthreads();
    if (tile + kStages - 1 < num_tiles) {
      load_tile((tile + kStages - 1) % kStages);
    }
    CpAsyncCommit();
    const bf16* ks = stages + (tile % kStages) * L::kStageElems + kw0 * S;
    const bf16* vs = ks + kTileKeys * S;

    // Decode: even and odd k16 steps accumulate into separate fragments. A decode warp has only
    // two n-blocks, and one chain of HD / 16 dependent MMAs each had left it waiting on MMA
    // latency (Nsight Compute, batch 64: "wait" the top stall, under two warps a scheduler).
    // Prefill warps have eight independent n-blocks already.
    constexpr int kOddBlocks = kDecode ? kSBlocks : 1;
    float s[kSBlocks][4];
    float s_odd[kOddBlocks][4];
#pragma unroll
    for (int nb = 0; nb < kSBlocks; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nb][e] = 0.0f;
    }
#pragma unroll
    for (int nb = 0; nb < kOddBlocks; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s_odd[nb][e] = 0.0f;
    }
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk += 2) {
#pragma unroll
      for (int nb = 0; nb < kSBlocks; ++nb) {
        uint32_t b[4];
        Ldmatrix4(b, ks + (nb * 8 + lane % 8) * S + kk * 16 + 8 * (lane / 8));
        Mma(s[nb], qa[kk], b[0], b[1]);
        Mma(kDecode ? s_odd[nb % kOddBlocks] : s[nb], qa[kk + 1], b[2], b[3]);
      }
    }
    if constexpr (kDecode) {
#pragma unroll
      for (int nb = 0; nb < kSBlocks; ++nb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[nb][e] += s_odd[nb][e];
      }
    }

    // Masks only where some key of the tile can be out of range for some row.
    const int first_key = t0 + kw0;
    if (first_key + kWarpKeys > it.kv_end || first_key + kWarpKeys - 1 > it.q_pos0 || window > 0) {
#pragma unroll
      for (int nb = 0; nb < kSBlocks; ++nb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = first_key + nb * 8 + 2 * t + (e & 1);
          const int qp = qpos[e >> 1];
          const bool ok = key < it.kv_end && key <= qp && (window <= 0 || key > qp - window);
          if (!ok) s[nb][e] = -INFINITY;
        }
      }
    }

    float mx[2] = {m[0], m[1]};
#pragma unroll
    for (int nb = 0; nb < kSBlocks; ++nb) {
      mx[0] = fmaxf(mx[0], fmaxf(s[nb][0], s[nb][1]));
      mx[1] = fmaxf(mx[1], fmaxf(s[nb][2], s[nb][3]));
    }
    float alpha[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
      mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
      alpha[i] = mx[i] == -INFINITY ? 1.0f : __expf(m[i] - mx[i]);
      m[i] = mx[i];
      l[i] *= alpha[i];
    }
#pragma unroll
    for (int nb = 0; nb < kSBlocks; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float mi = mx[e >> 1];
        const bool live = (e < 2 || hi_rows) && mi != -INFINITY;
        const float p = live ? __expf(s[nb][e] - mi) : 0.0f;
        s[nb][e] = p;
        l[e >> 1] += p;
      }
    }
    // Once the running maxima settle (most tiles of a long decode), the rescale is a no-op.
    if (alpha[0] != 1.0f || alpha[1] != 1.0f) {
#pragma unroll
      for (int nb = 0; nb < kOBlocks; ++nb) {
        o[nb][0] *= alpha[0];
        o[nb][1] *= alpha[0];
        o[nb][2] *= alpha[1];
        o[nb][3] *= alpha[1];
      }
    }

    // O += P V: the S fragments of two adjacent 8-key blocks are the A fragment of 16 keys.
#pragma unroll
    for (int kk = 0; kk < kWarpKeys / 16; ++kk) {
      const uint32_t pa[4] = {PackBf16(s[2 * kk][0], s[2 * kk][1]),
                              PackBf16(s[2 * kk][2], s[2 * kk][3]),
                              PackBf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              PackBf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int nb = 0; nb < kOBlocks; nb += 2) {
        uint32_t b[4];
        Ldmatrix4Trans(
            b, vs + (kk * 16 + lane % 8 + 8 * (lane / 8 % 2)) * S + nb * 8 + 8 * (lane / 16));
        Mma(o[nb], pa, b[0], b[1]);
        Mma(o[nb + 1], pa, b[2], b[3]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
  }

  if constexpr (!kDecode) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int r = row0 + g + 8 * i;
      if (r >= nrows) continue;
      const int tok = it.q_begin + r / group;
      const int h = kvh * group + r % group;
      if (it.num_chunks == 1) {
        const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
        bf16* out = reinterpret_cast<bf16*>(a.out) + static_cast<size_t>(tok) * q_dim + h * HD;
#pragma unroll
        for (int nb = 0; nb < kOBlocks; ++nb) {
          *reinterpret_cast<__nv_bfloat162*>(out + nb * 8 + 2 * t) =
              __floats2bfloat162_rn(o[nb][2 * i] * inv, o[nb][2 * i + 1] * inv);
        }
      } else {
        const size_t pi = (static_cast<size_t>(tok) * a.heads + h) * a.max_chunks + it.chunk;
        float* out = a.part_acc + pi * HD;
#pragma unroll
        for (int nb = 0; nb < kOBlocks; ++nb) {
          *reinterpret_cast<float2*>(out + nb * 8 + 2 * t) =
              make_float2(o[nb][2 * i], o[nb][2 * i + 1]);
        }
        if (t == 0) {
          a.part_ml[pi * 2] = m[i];
          a.part_ml[pi * 2 + 1] = l[i];
        }
      }
    }
  } else {
    // Merge the warps' partial softmaxes in the stage memory, once every warp is done
    // with it (the groups still pending are empty).
    CpAsyncWait<0>();
    __syncthreads();
    float* red = reinterpret_cast<float*>(stages);  // [warp][row][HD + 2]: O, then m, l
    constexpr int RS = HD + 2;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int r = g + 8 * i;
      float* dst = red + (warp * kDecodeRows + r) * RS;
#pragma unroll
      for (int nb = 0; nb < kOBlocks; ++nb) {
        dst[nb * 8 + 2 * t] = o[nb][2 * i];
        dst[nb * 8 + 2 * t + 1] = o[nb][2 * i + 1];
      }
      if (t == 0) {
        dst[HD] = m[i];
        dst[HD + 1] = l[i];
      }
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < group * HD; idx += kThreads) {
      const int r = idx / HD;
      const int d = idx % HD;
      float mxw = -INFINITY;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) mxw = fmaxf(mxw, red[(w * kDecodeRows + r) * RS + HD]);
      float sum = 0.0f, acc = 0.0f;
      if (mxw != -INFINITY) {
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
          const float* src = red + (w * kDecodeRows + r) * RS;
          const float scale = __expf(src[HD] - mxw);
          sum += scale * src[HD + 1];
          acc += scale * src[d];
        }
      }
      const int h = kvh * group + r;
      if (it.num_chunks == 1) {
        reinterpret_cast<bf16*>(a.out)[static_cast<size_t>(it.q_begin) * q_dim + h * HD + d] =
            __float2bfloat16(sum > 0.0f ? acc / sum : 0.0f);
      } else {
        const size_t pi = (static_cast<size_t>(it.q_begin) * a.heads + h) * a.max_chunks + it.chunk;
        a.part_acc[pi * HD + d] = acc;
        if (d == 0) {
          a.part_ml[pi * 2] = mxw;
          a.part_ml[pi * 2 + 1] = sum;
        }
      }
    }
  }
}

template <int HD, bool kDecode, class Shape>
void Launch(const AttnArgs& args, cudaStream_t stream) {
  constexpr size_t smem = FlashLayout<HD, kDecode, Shape>::kBytes;
  static bool configured = false;  // the engine loop is the one caller
  if (!configured) {
    cudaFuncSetAttribute(FlashAttentionKernel<HD, kDecode, Shape>,
                         cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    configured = true;
  }
  dim3 grid(args.num_items, args.kv_heads);
  FlashAttentionKernel<HD, kDecode, Shape><<<grid, Shape::kThreads, smem, stream>>>(args);
}

// Decode block shapes (AttnArgs::decode_variant), a table from measurements on an H200
// (bench/results/2026-12-01-cuda-h200-gemv.md, batch 64 / 256 step ms):
// - head dim 128 (Llama-3.1-8B shape, context 1024): 2 warps / 32-key tiles / 3 stages (56 KB,
//   four blocks per SM) 8.52 / 18.01, against 8.62-8.75 / 18.38 for 4 / 64 / 2, 8.96 / 18.95
//   for 4 / 64 / 3, 9.37 / 21.48 for 2 / 32 / 4, 10.28 / 24.56 for 2 / 32 / 6 and 12.16 /
//   32.40 for 1 / 16 / 8. After the run-copy load path (2026-12-01-cuda-h200-attn-tuner.md):
//   2 / 32 / 3 7.87-7.90 / 16.89-17.00, 4 / 64 / 3 7.90-7.98 / 16.99-17.00, 2 / 32 / 4
//   8.06-8.18 / 17.02-17.06, 2 / 64 / 2 8.48-8.79 / 17.25-17.28, 2 / 64 / 3 9.03 / 19.67;
// - head dim 64 (Llama-3.2-1B shape, context 2048): 4 / 64 / 2 (39 KB) 2.78-2.82 / 6.67-6.69,
//   against 3.28-3.31 / 7.41-7.42 for 2 / 32 / 3 (Qwen2.5-0.5B, group 7: 2.45 / 4.09-4.11
//   against 2.22-2.27 / 4.83-4.85).
// The same tile bytes per stage (16 KB of K and V) with the larger head win in both.
template <int HD>
void LaunchDecode(const AttnArgs& args, cudaStream_t stream) {
  switch (args.decode_variant) {
    case 1:
      return Launch<HD, true, FlashShape<2, 32, 4>>(args, stream);
    case 2:
      return Launch<HD, true, FlashShape<4, 64, 2>>(args, stream);
    case 3:
      return Launch<HD, true, FlashShape<4, 64, 3>>(args, stream);
    case 4:
      return Launch<HD, true, FlashShape<2, 64, 2>>(args, stream);
    case 5:
      return Launch<HD, true, FlashShape<2, 64, 3>>(args, stream);
    case 6:
      return Launch<HD, true, FlashShape<8, 128, 2>>(args, stream);
    case 7:
      return Launch<HD, true, FlashShape<4, 128, 2>>(args, stream);
    default:
      if constexpr (HD == 64) return Launch<HD, true, FlashShape<4, 64, 2>>(args, stream);
      return Launch<HD, true, FlashShape<2, 32, 3>>(args, stream);
  }
}

}  // namespace

bool LaunchFlashAttention(const AttnArgs& args, cudaStream_t stream) {
  const bool decode = args.rows_per_warp < 16;
  const int group = args.heads / args.kv_heads;
  if (decode && group > kDecodeRows) return false;
  if (!decode && args.rows_per_warp != 16) return false;
  switch (args.head_dim) {
    case 64:
      decode ? LaunchDecode<64>(args, stream) : Launch<64, false, PrefillShape>(args, stream);
      return true;
    case 128:
      decode ? LaunchDecode<128>(args, stream) : Launch<128, false, PrefillShape>(args, stream);
      return true;
    default:
      return false;
  }
}

}  // namespace jisu::cuda
