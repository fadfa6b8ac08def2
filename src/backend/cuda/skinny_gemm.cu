// Decode-batch products y[T, n] (+)= x[T, k] . w[n, k]^T for 3..16 tokens (between the fused
// GEMV and cuBLAS), BF16 in, FP32 out, on Hopper's warpgroup MMA (sm_90a). At these batch sizes
// every weight byte is read once per step for a few FLOPs, so the kernel is a weight stream with
// tensor cores at its end:
//
// - a block (one warpgroup) owns 64 weight rows and all T tokens (padded to 8 or 16) and walks
//   its k range in 128-element chunks (256 contiguous bytes of each row) through a 3-4 stage
//   cp.async ring;
// - shared memory holds each chunk in the 128-byte-swizzled K-major layout that wgmma reads
//   directly (weights as A, m64; tokens as B, n = padded T), so no operand passes through
//   registers;
// - narrow matrices (few row tiles: the QKV, o and down projections) split k over enough blocks
//   to fill the GPU; the blocks of a row tile form a thread-block cluster and add their partial
//   tiles through distributed shared memory in split order, so results do not depend on timing.
//   Cluster sizes are capped so that all clusters fit at once (FittingSplits).
//
// Measured on an H200 (bench/results/2026-12-02-cuda-h200-skinny-gemm.md): decode steps of the
// Llama-3.1-8B shape 5-6% shorter than on cuBLAS at 4 and 8 tokens, 3% at 16; from 24 tokens on
// cuBLAS is as fast or faster (at 64 tokens 7% faster than this kernel's best shape), so larger
// steps stay there. An mma.sync version (ldmatrix operands) was slower at every size.
#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/kernels.h"
#include "backend/cuda/mma.cuh"

namespace jisu::cuda {
namespace {

namespace cg = cooperative_groups;
using bf16 = __nv_bfloat16;

constexpr int kThreads = 128;  // one warpgroup
// The block shape in use: one m64 half of weight rows, two 64-element atoms of k a stage (each
// weight row contributes 256 contiguous bytes a stage). On an H200 (Llama-3.1-8B shape, decode
// step ms, three rounds against cuBLAS's 5.21-5.25 / 5.52 / 5.83-5.88 at 4 / 8 / 16 tokens):
// 64 rows x 128 k 4.93-4.97 / 5.22-5.28 / 5.66 (16 tokens with four stages); 128 x 64
// 5.37-5.45 at 8; 128 x 128 4.97-5.04 / 5.26-5.36 / 5.73; 64 x 256 5.03-5.06 / 5.31-5.35 /
// 6.50 (bench/results/2026-12-02-cuda-h200-skinny-gemm.md).
constexpr int kHalves = 1;
constexpr int kAtoms = 2;
constexpr int kMinChunksPerSplit = 4;
constexpr int kMaxSplits = 8;  // blocks of a cluster (the portable maximum)

// N: padded tokens (8, 16, 32 or 64); H: m64 halves of weight rows a block owns; A: 64-element
// swizzle atoms of k per stage (a row's A * 128 bytes are contiguous in memory).
template <int N, int kStages, int H, int A>
struct SkinnyLayout {
  static constexpr int kTileRows = 64 * H;
  static constexpr int kChunk = 64 * A;
  static constexpr int kWAtomBytes = kTileRows * 128;
  static constexpr int kXAtomBytes = N * 128;
  static constexpr int kWBytes = A * kWAtomBytes;
  static constexpr int kStageBytes = kWBytes + A * kXAtomBytes;    // multiples of 1 KB
  static constexpr int kSmemBytes = kStages * kStageBytes + 1024;  // + alignment slack
};

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define JISU_SKINNY_WGMMA 1
// Byte offset of piece p of row r in a [rows][64] BF16 stage: the 128-byte swizzle (16-byte
// piece index XOR row % 8 within 1 KB atoms) that wgmma's descriptors name, which also keeps the
// copies' shared-memory writes free of bank conflicts.
__device__ __forceinline__ int Swz(int r, int p) { return r * 128 + ((p ^ (r & 7)) << 4); }

// Shared-memory matrix descriptor (PTX ISA, wgmma "matrix descriptor"): K-major rows of 128
// bytes, 128-byte swizzle, 8-row groups 1024 bytes apart; the leading offset is unused for
// swizzled K-major operands. A k step of 16 elements inside the swizzle atom advances the start
// address by 32 bytes (the hardware applies the XOR to the final address).
__device__ __forceinline__ uint64_t SmemDesc(const void* p) {
  const uint32_t addr = SmemAddr(p);
  return static_cast<uint64_t>((addr & 0x3ffff) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) |
         (1ull << 62);
}

__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaWaitAll() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
// Keeps the compiler from moving accumulator reads or writes across the asynchronous MMAs.
template <int R>
__device__ __forceinline__ void FenceOperands(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Makes this thread's cp.async writes (generic proxy) visible to wgmma's reads (async proxy).
__device__ __forceinline__ void FenceProxyAsyncShared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// d (64 x N f32, the warpgroup's fragment) += A (64 x 16, desc_a) . B (N x 16, desc_b)^T.
__device__ __forceinline__ void Wgmma(float (&d)[4], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}
__device__ __forceinline__ void Wgmma(float (&d)[8], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}
#endif

struct SkinnyArgs {
  const bf16* w;
  const bf16* x;
  float* y;
  int n, k, tokens, splits, chunks;
  bool accumulate;
};

template <int N, int kStages, int H, int A>
__global__ void __launch_bounds__(kThreads) SkinnyGemmKernel(SkinnyArgs a) {
#ifdef JISU_SKINNY_WGMMA
  using L = SkinnyLayout<N, kStages, H, A>;
  constexpr int kTileRows = L::kTileRows;
  constexpr int kPieces = L::kChunk / 8;  // 16-byte pieces per row and stage
  constexpr int kRegs = N / 2;            // accumulators per thread and m64 half
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~static_cast<uintptr_t>(1023));
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int tile = blockIdx.x;
  const int split = blockIdx.y;
  const int row0 = tile * kTileRows;
  const int c_begin = static_cast<int>(static_cast<int64_t>(split) * a.chunks / a.splits);
  const int c_end = static_cast<int>(static_cast<int64_t>(split + 1) * a.chunks / a.splits);
  const int n_chunks = c_end - c_begin;
  const int k_pieces = a.k / 8;

  auto load = [&](int chunk, int stage) {
    unsigned char* sw = smem + stage * L::kStageBytes;
    unsigned char* sx = sw + L::kWBytes;
    const int p0 = chunk * kPieces;
#pragma unroll
    for (int j = 0; j < kTileRows * kPieces / kThreads; ++j) {
      const int idx = tid + j * kThreads;
      const int r = idx / kPieces, p = idx % kPieces;
      const bool ok = row0 + r < a.n && p0 + p < k_pieces;
      const bf16* src = ok ? a.w + static_cast<size_t>(row0 + r) * a.k + (p0 + p) * 8 : a.w;
      CpAsync16(sw + (p / 8) * L::kWAtomBytes + Swz(r, p % 8), src, ok);
    }
#pragma unroll
    for (int j = 0; j < (N * kPieces + kThreads - 1) / kThreads; ++j) {
      const int idx = tid + j * kThreads;
      if (idx < N * kPieces) {
        const int t = idx / kPieces, p = idx % kPieces;
        const bool ok = t < a.tokens && p0 + p < k_pieces;
        const bf16* src = ok ? a.x + static_cast<size_t>(t) * a.k + (p0 + p) * 8 : a.x;
        CpAsync16(sx + (p / 8) * L::kXAtomBytes + Swz(t, p % 8), src, ok);
      }
    }
  };

  float acc[H][kRegs];
#pragma unroll
  for (int h = 0; h < H; ++h) {
#pragma unroll
    for (int i = 0; i < kRegs; ++i) acc[h][i] = 0.0f;
  }

  // One commit group per stage (empty past the end): "chunk i has landed" is always "at most
  // kStages - 2 groups still pending".
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < n_chunks) load(c_begin + s, s);
    CpAsyncCommit();
  }
  for (int i = 0; i < n_chunks; ++i) {
    CpAsyncWait<kStages - 2>();
    FenceProxyAsyncShared();
    __syncthreads();  // chunk i visible to all; the MMAs of chunk i - 1 have completed
    if (i + kStages - 1 < n_chunks) load(c_begin + i + kStages - 1, (i + kStages - 1) % kStages);
    CpAsyncCommit();
    const unsigned char* sw = smem + (i % kStages) * L::kStageBytes;
    const unsigned char* sx = sw + L::kWBytes;
#pragma unroll
    for (int h = 0; h < H; ++h) FenceOperands(acc[h]);
    WgmmaFence();
#pragma unroll
    for (int kk = 0; kk < L::kChunk / 16; ++kk) {
      const int off = (kk / 4) * L::kWAtomBytes + (kk % 4) * 32;
      const uint64_t db = SmemDesc(sx + (kk / 4) * L::kXAtomBytes + (kk % 4) * 32);
#pragma unroll
      for (int h = 0; h < H; ++h) Wgmma(acc[h], SmemDesc(sw + off + h * 64 * 128), db);
    }
    WgmmaCommit();
    WgmmaWaitAll();
#pragma unroll
    for (int h = 0; h < H; ++h) FenceOperands(acc[h]);
  }
  CpAsyncWait<0>();

  // Fragment j (= h * N / 8 + i) of thread tid: accumulators 4i..4i+3 of half h, at weight rows
  // 64h + 16 warp + lane / 4 (+ 8) and tokens 8i + 2 (lane % 4) (+ 1).
  constexpr int kFrags = H * N / 8;
  auto frag = [&](int j) {
    const float* d = acc[j / (N / 8)] + 4 * (j % (N / 8));
    return make_float4(d[0], d[1], d[2], d[3]);
  };
  auto store = [&](int j, float4 v) {
    const int r = row0 + (j / (N / 8)) * 64 + warp * 16 + (lane >> 2);
    const int t = (j % (N / 8)) * 8 + 2 * (lane & 3);
    const float c[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int re = r + (e >> 1) * 8, te = t + (e & 1);
      if (re < a.n && te < a.tokens) {
        float* yp = a.y + static_cast<size_t>(te) * a.n + re;
        *yp = a.accumulate ? *yp + c[e] : c[e];
      }
    }
  };

  if (a.splits == 1) {
#pragma unroll
    for (int j = 0; j < kFrags; ++j) store(j, frag(j));
    return;
  }
  // Split k: the tile's blocks form one cluster (rank = split). Each parks its partial tile in
  // its own shared memory as [fragment][thread] float4s; then block s finishes fragments
  // s, s + splits, ... by reading that slot from every block of the cluster and adding them in
  // rank order, so the result does not depend on timing.
  __syncthreads();  // the stages are no longer read
  float4* part = reinterpret_cast<float4*>(smem);
#pragma unroll
  for (int j = 0; j < kFrags; ++j) part[j * kThreads + tid] = frag(j);
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  for (int j = split; j < kFrags; j += a.splits) {
    float4 v[kMaxSplits];
#pragma unroll
    for (int s = 0; s < kMaxSplits; ++s) {
      if (s < a.splits) v[s] = cluster.map_shared_rank(part, s)[j * kThreads + tid];
    }
    float4 sum = v[0];
#pragma unroll
    for (int s = 1; s < kMaxSplits; ++s) {
      if (s < a.splits) {
        sum.x += v[s].x;
        sum.y += v[s].y;
        sum.z += v[s].z;
        sum.w += v[s].w;
      }
    }
    store(j, sum);
  }
  cluster.sync();  // the peers' shared memory must outlive every read of it
#else
  __trap();  // built for sm_90a only; the host launches it on compute capability 9.x alone
#endif
}

// Largest cluster size <= `splits` whose clusters of this kernel all fit on the GPU at once:
// clusters are placed whole inside one GPC, so on an H200 only ~30 clusters of 8 blocks of
// ~100 KB fit, and a 32-tile matrix split 8 ways would run in two waves.
template <int N, int ST, int H, int A>
int FittingSplits(cudaLaunchConfig_t config, int tiles, int splits) {
  static int max_clusters[kMaxSplits + 1] = {};  // per cluster size, queried once
  for (int s = splits; s > 1; --s) {
    if (max_clusters[s] == 0) {
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = 1;
      attr[0].val.clusterDim.y = s;
      attr[0].val.clusterDim.z = 1;
      config.gridDim = dim3(tiles, s);
      config.attrs = attr;
      config.numAttrs = 1;
      int n = 0;
      if (cudaOccupancyMaxActiveClusters(&n, SkinnyGemmKernel<N, ST, H, A>, &config) !=
          cudaSuccess) {
        cudaGetLastError();
        n = 0;
      }
      max_clusters[s] = std::max(n, 1);
    }
    if (tiles <= max_clusters[s]) return s;
  }
  return 1;
}

// k splits that give about two blocks an SM, each split at least kMinChunksPerSplit chunks.
int Splits(int n, int k, int num_sms, int tile_rows, int chunk) {
  const int tiles = (n + tile_rows - 1) / tile_rows;
  const int chunks = (k + chunk - 1) / chunk;
  const int by_grid = 2 * std::max(1, num_sms) / std::max(1, tiles);
  const int by_k = std::max(1, chunks / kMinChunksPerSplit);
  return std::max(1, std::min({by_grid, by_k, kMaxSplits}));
}

template <int N, int ST, int H, int A>
void Launch(SkinnyArgs a, int num_sms, cudaStream_t stream) {
  using L = SkinnyLayout<N, ST, H, A>;
  static const bool configured = [] {
    cudaFuncSetAttribute(SkinnyGemmKernel<N, ST, H, A>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         L::kSmemBytes);
    return true;
  }();
  (void)configured;
  const int tiles = (a.n + L::kTileRows - 1) / L::kTileRows;
  a.chunks = (a.k + L::kChunk - 1) / L::kChunk;
  a.splits = Splits(a.n, a.k, num_sms, L::kTileRows, L::kChunk);
  cudaLaunchConfig_t config = {};
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = L::kSmemBytes;
  config.stream = stream;
  if (a.splits > 1) a.splits = FittingSplits<N, ST, H, A>(config, tiles, a.splits);
  config.gridDim = dim3(tiles, a.splits);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = a.splits;
  attr[0].val.clusterDim.z = 1;
  config.attrs = attr;
  config.numAttrs = a.splits > 1 ? 1 : 0;
  cudaLaunchKernelEx(&config, SkinnyGemmKernel<N, ST, H, A>, a);
}

// wgmma and clusters: compute capability 9.x (the sm_90a code).
bool DeviceIsHopper() {
  static const bool yes = [] {
    int dev = 0, major = 0;
    return cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
           major == 9;
  }();
  return yes;
}

}  // namespace

int SkinnyGemmSplits(int n, int k, int num_sms) {
  return Splits(n, k, num_sms, 64 * kHalves, 64 * kAtoms);
}

bool LaunchSkinnyGemm(const uint16_t* w, int n, int k, const uint16_t* x, int tokens, float* y,
                      bool accumulate, int num_sms, cudaStream_t stream) {
  if (n < 1 || k < 8 || k % 8 != 0 || tokens < 1 || tokens > kMaxSkinnyTokens) return false;
  if (!DeviceIsHopper()) return false;
  SkinnyArgs a;
  a.w = reinterpret_cast<const bf16*>(w);
  a.x = reinterpret_cast<const bf16*>(x);
  a.y = y;
  a.n = n;
  a.k = k;
  a.tokens = tokens;
  a.accumulate = accumulate;
  // Stages per token tile from measurements: 3 at 8 tokens (four blocks an SM), 4 at 16.
  if (tokens <= 8) {
    Launch<8, 3, kHalves, kAtoms>(a, num_sms, stream);
  } else {
    Launch<16, 4, kHalves, kAtoms>(a, num_sms, stream);
  }
  static_assert(kMaxSkinnyTokens == 16, "token tiles: 8 or 16");
  return true;
}

}  // namespace jisu::cuda
