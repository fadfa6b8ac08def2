// The reference device sampler (see sampling.cu for the filters it implements), for any number
// of rows: 1024-thread blocks, thresholds by radix selection with float histograms in shared
// memory.
//
// A row is split over S blocks when there are few rows (S = SMs / rows, up to 16): one block
// scanning a 128K vocabulary about eight times is instruction-bound on one SM (~0.47 ms a row
// on an H200). The blocks of a row run as one cooperative grid: each reduction (max, sums,
// histograms, the draw's masses) is a per-block partial in global memory, a grid sync, and
// the S partials combined in block order by every block, so all blocks take the same
// decisions and the result does not depend on timing. Two
// departures from the host sampler, both at exact float ties only: top-p keeps every token
// equal to the cut value (the host keeps ties in id order until the mass is reached), and the
// draw walks kept tokens in id order (the host walks its candidate order); the distribution
// drawn from is the same.
#include <cooperative_groups.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cuda/kernels.h"
#include "backend/cuda/sampling_internal.cuh"

namespace jisu::cuda::sampling {
namespace {

constexpr int kThreads = 1024;

struct BlockScratch {
  // Per-warp histograms: the first pass bins by the exponent byte, where nearly every token of
  // a row falls into two or three bins; one shared histogram would serialize the whole block
  // on those addresses (measured ~1 ms a row at a 128K vocabulary), 32 of them only each warp.
  float wbin[kThreads / 32][kBins];
  float fbin[kBins];
  double red[kThreads / 32];
  float redf[kThreads / 32];
  int redi[kThreads / 32];
  uint32_t prefix;
  double mass_above;
  int remaining;
  int found;
};

__device__ double BlockSumD(double v, BlockScratch& s) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) s.red[warp] = v;
  __syncthreads();
  double r = 0;
  for (int w = 0; w < kThreads / 32; ++w) r += s.red[w];
  return r;
}

// Max value; ties by lowest id. Every thread gets both.
__device__ void BlockArgMax(float v, int id, BlockScratch& s, float* best_v, int* best_id) {
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, id, o);
    if (ov > v || (ov == v && oi < id)) {
      v = ov;
      id = oi;
    }
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) {
    s.redf[warp] = v;
    s.redi[warp] = id;
  }
  __syncthreads();
  float bv = s.redf[0];
  int bi = s.redi[0];
  for (int w = 1; w < kThreads / 32; ++w) {
    if (s.redf[w] > bv || (s.redf[w] == bv && s.redi[w] < bi)) {
      bv = s.redf[w];
      bi = s.redi[w];
    }
  }
  *best_v = bv;
  *best_id = bi;
}

// Blocks per row at most: on an H200 (8B shape, batch 1) 8, 16 and 32 gave the same step within
// 1% (one top-p row 115-125 us at 16, 136-148 at 32); 125 blocks took 542 us (grid syncs).
constexpr int kMaxSplit = 16;

// Where a row's blocks meet: partials indexed by grid block, double-buffered so that a pass
// can write its partials while no block still reads the previous pass's.
struct SamplePartials {
  float* hist;   // [2][grid][kBins]
  double* sum;   // [2][grid]
  float* max_v;  // [grid]
  int* max_id;   // [grid]
};

// This block's share of its row.
struct RowSlice {
  int split;   // S: blocks per row
  int part;    // this block's index within the row
  int first;   // grid index of the row's first block
  int lo, hi;  // vocabulary range of this block
  SamplePartials g;
  int buf = 0;  // alternates between the two partial buffers
};

__device__ void RowSync() { cooperative_groups::this_grid().sync(); }

// A block's view of its logits: its share of the row copied into shared memory when it fits
// (split rows: every pass after the first reads shared memory instead of waiting on L2 loads),
// else the row in global memory.
struct RowView {
  const float* global;
  const float* cached;  // [lo, hi) of the row, or null
  int lo;
  __device__ __forceinline__ float operator[](int i) const {
    return cached != nullptr ? cached[i - lo] : global[i];
  }
};
// Floats of a row slice cached in shared memory at most (48 KB).
constexpr int kMaxCached = 12288;

// The row's S partials at src[first .. first + S), all loads in flight at once (a loop that
// waits for each L2 load before the next had made every cross-block reduction ~S round trips
// long); `fill` past S.
template <typename T>
__device__ __forceinline__ void LoadPartials(const T* src, const RowSlice& rs, T fill,
                                             T (&v)[kMaxSplit]) {
#pragma unroll
  for (int p = 0; p < kMaxSplit; ++p) v[p] = p < rs.split ? __ldcg(src + rs.first + p) : fill;
}

// Max value over the row; ties by lowest id. Every thread gets both.
__device__ void RowArgMax(float v, int id, BlockScratch& s, RowSlice& rs, float* best_v,
                          int* best_id) {
  BlockArgMax(v, id, s, best_v, best_id);
  if (rs.split == 1) return;
  if (threadIdx.x == 0) {
    rs.g.max_v[blockIdx.x] = *best_v;
    rs.g.max_id[blockIdx.x] = *best_id;
  }
  RowSync();
  float pv[kMaxSplit];
  int pi[kMaxSplit];
  LoadPartials(rs.g.max_v, rs, -INFINITY, pv);
  LoadPartials(rs.g.max_id, rs, 0x7fffffff, pi);
  float bv = -INFINITY;
  int bi = 0x7fffffff;
#pragma unroll
  for (int p = 0; p < kMaxSplit; ++p) {
    if (pv[p] > bv || (pv[p] == bv && pi[p] < bi)) {
      bv = pv[p];
      bi = pi[p];
    }
  }
  *best_v = bv;
  *best_id = bi == 0x7fffffff ? 0 : bi;
}

// Sum over the row (per-block sums combined in block order). With `offset`, also this block's
// exclusive prefix (the mass of the row's earlier blocks).
__device__ double RowSumD(double v, BlockScratch& s, RowSlice& rs, double* offset = nullptr) {
  v = BlockSumD(v, s);
  if (offset) *offset = 0;
  if (rs.split == 1) return v;
  double* sums = rs.g.sum + rs.buf * gridDim.x;
  rs.buf ^= 1;
  if (threadIdx.x == 0) sums[blockIdx.x] = v;
  RowSync();
  double v_p[kMaxSplit];
  LoadPartials(sums, rs, 0.0, v_p);
  double total = 0;
#pragma unroll
  for (int p = 0; p < kMaxSplit; ++p) {
    if (p == rs.part && offset) *offset = total;
    total += v_p[p];
  }
  return total;
}

// Warp 0: the highest bin d where the mass above it (s.mass_above + bins > d) plus its own
// reaches `target`; sets s.prefix's digit, s.mass_above, and s.found = 0 when no bin does.
// A lane sums 8 bins, a scan over lanes finds the lane that crosses the target, and that lane
// walks its bins (one thread walking all 256 had taken ~4 us a pass).
__device__ void FindTargetBin(BlockScratch& s, double target, uint32_t prefix, int shift) {
  constexpr int kPer = kBins / 32;
  const int lane = threadIdx.x % 32;
  const int top = kBins - 1 - lane * kPer;  // this lane's bins: top, top - 1, ..., descending
  double chunk = 0;
#pragma unroll
  for (int j = 0; j < kPer; ++j) chunk += s.fbin[top - j];
  double incl = chunk;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const double v = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += v;
  }
  double excl = __shfl_up_sync(0xffffffffu, incl, 1);
  if (lane == 0) excl = 0;
  const double base = s.mass_above;
  const unsigned hit = __ballot_sync(0xffffffffu, base + incl >= target);
  __syncwarp();
  if (hit == 0) {
    if (lane == 31) {
      s.found = 0;  // rounding: the target is not reached
      s.mass_above = base + incl;
      s.prefix = prefix;
    }
    return;
  }
  if (lane != __ffs(hit) - 1) return;
  double above = base + excl;
  int d = top - kPer + 1;  // the lane's last bin if rounding keeps the walk below the target
  for (int j = 0; j < kPer; ++j) {
    if (above + s.fbin[top - j] >= target) {
      d = top - j;
      break;
    }
    if (j + 1 < kPer) above += s.fbin[top - j];
  }
  s.mass_above = above;
  s.prefix = prefix | (static_cast<uint32_t>(d) << shift);
}

// The largest key t such that the weight of kept tokens with key > t is below `target` and
// with key >= t reaches it (count weights: the target-th largest). found = 0 when the kept
// weight never reaches the target. `weight(i, v)` is the token's weight (0 = not kept).
template <typename Weight>
__device__ uint32_t RadixSelect(const RowView& v, RowSlice& rs, double target, Weight weight,
                                BlockScratch& s, bool* found) {
  if (threadIdx.x == 0) {
    s.prefix = 0;
    s.mass_above = 0;
    s.found = 1;
  }
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 24 - 8 * pass;
    const uint32_t hi_mask = pass == 0 ? 0u : (0xffffffffu << (shift + 8));
    float* my_bins = s.wbin[threadIdx.x / 32];
    for (int b = threadIdx.x; b < kThreads / 32 * kBins; b += kThreads) (&s.wbin[0][0])[b] = 0.0f;
    __syncthreads();
    const uint32_t prefix = s.prefix;
    for (int i = rs.lo + threadIdx.x; i < rs.hi; i += kThreads) {
      const float x = v[i];
      const float w = weight(i, x);
      if (w <= 0.0f) continue;
      const uint32_t key = OrderKey(x);
      if ((key & hi_mask) != (prefix & hi_mask)) continue;
      atomicAdd(&my_bins[(key >> shift) & 0xff], w);
    }
    __syncthreads();
    float* hist = rs.g.hist + static_cast<size_t>(rs.buf) * gridDim.x * kBins;
    for (int b = threadIdx.x; b < kBins; b += kThreads) {
      float sum = 0.0f;
      for (int w = 0; w < kThreads / 32; ++w) sum += s.wbin[w][b];
      s.fbin[b] = sum;
      if (rs.split > 1) hist[static_cast<size_t>(blockIdx.x) * kBins + b] = sum;
    }
    if (rs.split > 1) {
      rs.buf ^= 1;
      RowSync();
      for (int b = threadIdx.x; b < kBins; b += kThreads) {
        float h[kMaxSplit];
#pragma unroll
        for (int p = 0; p < kMaxSplit; ++p) {
          h[p] = p < rs.split ? __ldcg(hist + static_cast<size_t>(rs.first + p) * kBins + b) : 0.0f;
        }
        float sum = 0.0f;
#pragma unroll
        for (int p = 0; p < kMaxSplit; ++p) sum += h[p];
        s.fbin[b] = sum;
      }
    }
    __syncthreads();
    if (threadIdx.x < 32) FindTargetBin(s, target, prefix, shift);
    __syncthreads();
    if (!s.found && rs.split == 1) break;  // split rows keep every block's syncs in step
  }
  __syncthreads();
  *found = s.found != 0;
  return s.prefix;
}

// What any row of the launch asks for (from the host's copy of the parameters). The blocks of a
// split grid take every grid sync together, so a filter that one row uses runs (as a no-op) in
// every row; one that no row uses is skipped by all (batch 1, temperature + top-p: four grid
// syncs and passes over the row fewer).
struct LaunchFilters {
  bool all_greedy = false;
  bool any_top_k = false;
  bool any_top_p = false;
};

__global__ void __launch_bounds__(kThreads)
    SampleRowsKernel(const float* logits, int vocab, const DeviceSampling* params, int32_t* out,
                     int split, SamplePartials partials, LaunchFilters filters, bool cache) {
  __shared__ BlockScratch s;
  extern __shared__ float cached_slice[];
  RowSlice rs;
  rs.split = split;
  rs.part = blockIdx.x % split;
  rs.first = blockIdx.x - rs.part;
  const int per_block = (vocab + split - 1) / split;
  rs.lo = min(vocab, rs.part * per_block);
  rs.hi = min(vocab, rs.lo + per_block);
  rs.g = partials;
  const int r = blockIdx.x / split;
  const DeviceSampling p = params[r];
  const float* global_row = logits + static_cast<size_t>(p.row) * vocab;
  const RowView row{global_row, cache ? cached_slice : nullptr, rs.lo};
  // Split rows never return early: every block must reach every grid sync.
  const bool coop = split > 1;

  // Greedy, and the max for every other path.
  // Divided, not multiplied by the reciprocal: the host sampler's rounding.
  const bool scale = p.temperature > 0.0f && p.temperature != 1.0f;
  float best = -INFINITY;
  int best_id = rs.lo;
  for (int i = rs.lo + threadIdx.x; i < rs.hi; i += kThreads) {
    float x = global_row[i];
    if (cache) cached_slice[i - rs.lo] = x;  // visible to all after RowArgMax's barriers
    if (isnan(x)) x = -INFINITY;
    if (scale) x /= p.temperature;
    if (x > best) {  // strided ids ascend per thread: ties keep the lowest
      best = x;
      best_id = i;
    }
  }
  float max_v;
  int max_id;
  RowArgMax(best, best_id, s, rs, &max_v, &max_id);
  const bool greedy = p.temperature <= 0.0f || max_v == -INFINITY || max_v == INFINITY;
  if (greedy && (!coop || filters.all_greedy)) {
    if (threadIdx.x == 0 && rs.part == 0) out[r] = max_id;
    return;
  }
  auto value = [&](int i) {
    const float x = row[i];
    if (isnan(x)) return -INFINITY;
    return scale ? x / p.temperature : x;
  };

  // top-k: the k-th largest finite value (ties at it stay).
  float kth = -INFINITY;
  const bool use_top_k = !greedy && p.top_k > 0 && p.top_k < vocab;
  if (use_top_k || (coop && filters.any_top_k)) {
    bool found = false;
    const uint32_t key = RadixSelect(
        row, rs, static_cast<double>(p.top_k),
        [&](int i, float) { return use_top_k && value(i) > -INFINITY ? 1.0f : 0.0f; }, s, &found);
    // The selection ran over raw logits: temperature > 0 preserves order, so the k-th key is
    // the k-th token; its scaled value is the threshold.
    if (found && use_top_k) {
      const uint32_t u = (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
      const float raw = __uint_as_float(u);
      kth = scale ? raw / p.temperature : raw;
    }
  }
  auto topk_weight = [&](int i) {
    if (greedy) return 0.0f;
    const float x = value(i);
    return (x > -INFINITY && x >= kth) ? __expf(x - max_v) : 0.0f;
  };
  double total = 0;
  for (int i = rs.lo + threadIdx.x; i < rs.hi; i += kThreads) total += topk_weight(i);
  total = RowSumD(total, s, rs);
  auto kept_weight = [&](int i) {
    const float w = topk_weight(i);
    return w >= p.min_p ? w : 0.0f;
  };

  // top-p: the cut key over the weights that survive top-k and min-p.
  bool has_cut = false;
  uint32_t cut = 0;
  const bool use_top_p = !greedy && p.top_p < 1.0f;
  if (use_top_p || (coop && filters.any_top_p)) {
    bool found = false;
    cut = RadixSelect(
        row, rs, static_cast<double>(p.top_p) * total,
        [&](int i, float) { return use_top_p ? kept_weight(i) : 0.0f; }, s, &found);
    has_cut = found && use_top_p;
  }
  auto final_weight = [&](int i) {
    const float w = kept_weight(i);
    if (w <= 0.0f) return 0.0f;
    return (!has_cut || OrderKey(row[i]) >= cut) ? w : 0.0f;
  };

  // Draw: contiguous id ranges per thread, an exclusive scan of their masses, and the thread
  // whose range holds u x mass walks it (in the block whose share of the row holds it).
  const int per = (rs.hi - rs.lo + kThreads - 1) / kThreads;
  const int begin = min(rs.hi, rs.lo + threadIdx.x * per);
  const int end = min(rs.hi, begin + per);
  double mine = 0;
  for (int i = begin; i < end; ++i) mine += final_weight(i);
  __shared__ double scan[kThreads];
  scan[threadIdx.x] = mine;
  __syncthreads();
  for (int off = 1; off < kThreads; off <<= 1) {
    const double add = threadIdx.x >= off ? scan[threadIdx.x - off] : 0.0;
    __syncthreads();
    scan[threadIdx.x] += add;
    __syncthreads();
  }
  const double block_mass = scan[kThreads - 1];
  double block_before = 0;
  double sum = block_mass;
  bool chooser = true;
  if (coop) {
    // The row's mass by blocks; the block holding u x mass draws (the last block with mass
    // when rounding puts the point at the very end).
    double* sums = rs.g.sum + rs.buf * gridDim.x;
    if (threadIdx.x == 0) sums[blockIdx.x] = block_mass;
    RowSync();
    double masses[kMaxSplit];
    LoadPartials(sums, rs, 0.0, masses);
    sum = 0;
    int holder = -1, last_nonzero = -1;
#pragma unroll
    for (int q = 0; q < kMaxSplit; ++q) sum += masses[q];
    const double point = p.u * sum;
    double acc = 0;
#pragma unroll
    for (int q = 0; q < kMaxSplit; ++q) {
      if (q >= rs.split) break;
      const double m = masses[q];
      if (m > 0) {
        last_nonzero = q;
        if (holder < 0 && point < acc + m) holder = q;
      }
      if (q == rs.part) block_before = acc;
      acc += m;
    }
    if (holder < 0) holder = last_nonzero;
    chooser = holder == rs.part || (holder < 0 && rs.part == 0);
    if (greedy) chooser = rs.part == 0;
  }
  if (!chooser) return;
  if (greedy) {
    if (threadIdx.x == 0) out[r] = max_id;
    return;
  }
  const double x = p.u * sum - block_before;
  const double before = scan[threadIdx.x] - mine;
  if (threadIdx.x == 0) s.found = -1;
  __syncthreads();
  if (mine > 0 && x >= before && x < before + mine) {
    double acc = before;
    int pick = -1, last = -1;
    for (int i = begin; i < end; ++i) {
      const float w = final_weight(i);
      if (w <= 0.0f) continue;
      last = i;
      acc += w;
      if (x < acc) {
        pick = i;
        break;
      }
    }
    s.found = pick >= 0 ? pick : last;
  }
  __syncthreads();
  if (threadIdx.x == 0) out[r] = s.found >= 0 ? s.found : max_id;
}

constexpr size_t kReferenceBytes =
    kGrid * (2 * kBins * sizeof(float) + 2 * sizeof(double) + sizeof(float) + sizeof(int));

}  // namespace

size_t ReferenceScratchBytes() { return kReferenceBytes; }

void LaunchReferenceSample(const float* logits, int vocab, const DeviceSampling* params,
                           const DeviceSampling* host_params, int num_rows, int32_t* out,
                           void* scratch, cudaStream_t stream, int max_cached) {
  LaunchFilters filters;
  filters.all_greedy = true;
  for (int r = 0; r < num_rows; ++r) {
    const DeviceSampling& p = host_params[r];
    const bool greedy = p.temperature <= 0.0f;
    filters.all_greedy &= greedy;
    filters.any_top_k |= !greedy && p.top_k > 0 && p.top_k < vocab;
    filters.any_top_p |= !greedy && p.top_p < 1.0f;
  }
  // Blocks per row: as many as keep every block of the grid resident at once (a cooperative
  // launch needs that), at most kMaxSplit.
  static const int capacity = [] {
    constexpr int kCacheBytes = kMaxCached * sizeof(float);
    cudaFuncSetAttribute(SampleRowsKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         kCacheBytes);
    return CooperativeCapacity(SampleRowsKernel, kThreads, kCacheBytes);
  }();
  int split = scratch != nullptr && capacity > 0 ? std::min(kMaxSplit, capacity / num_rows) : 1;
  split = std::min(split, vocab / kThreads);  // at least a token per thread
  if (split < 2) split = 1;
  SamplePartials partials{};
  if (split > 1) {
    auto* base = static_cast<unsigned char*>(scratch);
    partials.hist = reinterpret_cast<float*>(base);
    partials.sum = reinterpret_cast<double*>(base + kGrid * 2 * kBins * sizeof(float));
    partials.max_v = reinterpret_cast<float*>(partials.sum + 2 * kGrid);
    partials.max_id = reinterpret_cast<int*>(partials.max_v + kGrid);
    const int per_block = (vocab + split - 1) / split;
    bool cache = per_block <= (max_cached < 0 ? kMaxCached : std::min(max_cached, kMaxCached));
    const size_t cache_bytes = cache ? per_block * sizeof(float) : 0;
    void* args[] = {const_cast<float**>(&logits),
                    &vocab,
                    const_cast<DeviceSampling**>(&params),
                    &out,
                    &split,
                    &partials,
                    &filters,
                    &cache};
    if (cudaLaunchCooperativeKernel(reinterpret_cast<void*>(SampleRowsKernel),
                                    dim3(num_rows * split), dim3(kThreads), args, cache_bytes,
                                    stream) == cudaSuccess) {
      return;
    }
    cudaGetLastError();  // not launched: one block per row then
    split = 1;
  }
  SampleRowsKernel<<<num_rows, kThreads, 0, stream>>>(logits, vocab, params, out, 1, partials,
                                                      filters, false);
}

}  // namespace jisu::cuda::sampling
