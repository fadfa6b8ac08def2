// Token sampling on the GPU, so only token ids cross PCIe. The filters
// follow sampling/sampler.cc: NaN logits never win; temperature; top-k keeps every token equal
// to the k-th value; min-p keeps weights exp(v - max) >= min_p; top-p keeps tokens in
// descending order while the mass before them is below top_p x (mass of the top-k survivors);
// the draw uses a uniform number from the request's own generator (drawn on the host, so a
// seed gives the same sequence of draws on every device).
//
// Thresholds are found by radix selection over order-preserving 32-bit keys (passes of 8 bits,
// histograms in shared memory), never by sorting the vocabulary.
//
// Two implementations: the fast path (FastSampleKernel, below) for launches of few rows, and
// the reference path (SampleRowsKernel) for any number of rows, described here.
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
#include <cstdlib>
#include <cstring>

#include "cuda/kernels.h"

namespace jisu::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kBins = 256;

__device__ __forceinline__ uint32_t OrderKey(float v) {
  const uint32_t u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

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

// ---------------------------------------------------------------------------------------------
// Few rows (the fast path): every row split over S blocks of 512 threads (S up to 64), each
// thread holding up to kPer consecutive logits in registers, read once. After one grid sync for
// the row's max, the blocks of a row meet at their own barriers (a counter per row), so rows
// finish independently and a row returns as soon as its token is known (greedy rows right
// after the max). Masses are 2^-40 fixed point (weights below 2^-40 weigh nothing), summed as
// integers: histograms, totals and the draw are exact and do not depend on the order of the
// additions, so every block of a row takes the same decisions and a seed draws the same token
// on every run. The top-p cut is selected over the weights' bits (exponent byte, then 8, 8, 7
// mantissa bits), which order like the logits; a pass whose target bin holds one token is the
// last, and one whose bin holds at most 32 lists them and finds the cut (top-k: the k-th key)
// among them after one more barrier. Ties at the cut stay, as on the reference path.
constexpr int kFastThreads = 512;
constexpr int kFastWarps = kFastThreads / 32;
constexpr int kFastMaxSplit = 64;            // two per lane where a warp reads the row's partials
constexpr int kHistCopies = kFastWarps / 2;  // one histogram per pair of warps

// A row's accumulators in global memory, zeroed by the row's first block before the grid sync.
// A target bin of at most 32 tokens is resolved from a list of its tokens ("candidates").
constexpr int kMaxCandidates = 32;
struct FastRowAcc {
  unsigned long long total;                       // fixed-point mass of the top-k survivors
  unsigned long long mass[4][kBins];              // top-p passes: mass per bin
  unsigned long long pcand_mass[kMaxCandidates];  // top-p candidates: mass
  unsigned int pcount[4][kBins];                  // top-p passes: tokens per bin
  unsigned int kcount[4][kBins];                  // top-k passes: tokens per bin
  unsigned int pcand_key[kMaxCandidates];         // top-p candidates: weight bits
  unsigned int pcand_part[kMaxCandidates];        // top-p candidates: block of the row
  unsigned int kcand_key[kMaxCandidates];         // top-k candidates: logit keys
  unsigned int pcand_n, kcand_n;                  // candidates listed
  unsigned int barrier;                           // arrivals at the row's barriers
  unsigned int pad[3];
};
static_assert(sizeof(FastRowAcc) % 16 == 0, "zeroed as uint4");

struct FastScratch {
  float* max_v;              // [grid]
  int* max_id;               // [grid]
  unsigned long long* draw;  // [grid] block masses of the draw
  FastRowAcc* rows;          // [rows]
};

struct FastShared {
  unsigned int hh[kHistCopies][kBins];  // mass / 2^20 (top-p) per bin
  unsigned int hl[kHistCopies][kBins];  // mass mod 2^20
  unsigned int hc[kHistCopies][kBins];  // tokens
  unsigned long long bins[kBins];
  unsigned int counts[kBins];
  unsigned long long wsum[kFastWarps];
  float wv[kFastWarps];
  int wi[kFastWarps];
  unsigned long long above;
  int digit;
  int found;
};

// trunc(w * 2^40) as hi * 2^20 + lo (w in [0, 1]; both parts below 2^20 except hi = 2^20 at 1).
__device__ __forceinline__ void FixedParts(float w, unsigned int& hi, unsigned int& lo) {
  const float s = w * 1048576.0f;
  const float h = floorf(s);
  hi = static_cast<unsigned int>(h);
  lo = static_cast<unsigned int>((s - h) * 1048576.0f);
}
__device__ __forceinline__ unsigned long long Fixed(float w) {
  unsigned int hi, lo;
  FixedParts(w, hi, lo);
  return (static_cast<unsigned long long>(hi) << 20) + lo;
}
constexpr float kMinFixed = 0x1p-40f;  // the smallest weight with mass

// The row's blocks wait for each other (all resident: cooperative launch). `target` = the
// arrivals after this barrier (n-th barrier: n * S). The block's writes before it are released
// by thread 0's arrival (after the block barrier) and acquired by the others' polling load.
__device__ __forceinline__ void RowBarrier(unsigned int* counter, unsigned int target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
    unsigned int seen;
    do {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
    } while (seen < target);
  }
  __syncthreads();
}

// Warp 0: the highest bin d (of 256, descending) where above0 + the bins above d + bin d reach
// `target`; s.digit, s.above (above0 + bins above d), s.found. Integer masses: exact.
__device__ void FindTargetBin64(FastShared& s, unsigned long long above0,
                                unsigned long long target) {
  constexpr int kPer = kBins / 32;
  const int lane = threadIdx.x % 32;
  const int top = kBins - 1 - lane * kPer;
  unsigned long long chunk = 0;
#pragma unroll
  for (int j = 0; j < kPer; ++j) chunk += s.bins[top - j];
  unsigned long long incl = chunk;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned long long v = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += v;
  }
  const unsigned hit = __ballot_sync(0xffffffffu, above0 + incl >= target);
  if (hit == 0) {
    if (lane == 0) s.found = 0;
    return;
  }
  if (lane != __ffs(hit) - 1) return;
  unsigned long long above = above0 + incl - chunk;
  int d = top - kPer + 1;
  for (int j = 0; j < kPer; ++j) {
    const unsigned long long b = s.bins[top - j];
    if (above + b >= target) {
      d = top - j;
      break;
    }
    above += b;
  }
  s.digit = d;
  s.above = above;
  s.found = 1;
}

// Every warp: lane i < n holds listed token i (key, mass; lanes >= n: mass 0); the largest key k
// such that `above` + the mass of the listed tokens with key >= k reaches `target` (0: none).
__device__ uint32_t ResolveCandidates(uint32_t key, unsigned long long m, unsigned long long above,
                                      unsigned long long target) {
  unsigned long long ge = 0;  // mass of the listed tokens with key >= this lane's
  for (int j = 0; j < kMaxCandidates; ++j) {
    const uint32_t kj = __shfl_sync(0xffffffffu, key, j);
    const unsigned long long mj = __shfl_sync(0xffffffffu, m, j);
    if (kj >= key) ge += mj;
  }
  uint32_t best = m > 0 && above + ge >= target ? key : 0u;
  for (int o = 16; o > 0; o >>= 1) best = max(best, __shfl_xor_sync(0xffffffffu, best, o));
  return best;
}

// Every warp: the row's per-block masses (block q in lane q's m0, block q + 32 in its m1);
// their sum and the mass of the blocks before block `part`.
__device__ void RowPrefix(unsigned long long m0, unsigned long long m1, int part,
                          unsigned long long* sum, unsigned long long* before) {
  const int lane = threadIdx.x % 32;
  unsigned long long c0 = m0, c1 = m1;
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned long long v0 = __shfl_up_sync(0xffffffffu, c0, o);
    const unsigned long long v1 = __shfl_up_sync(0xffffffffu, c1, o);
    if (lane >= o) {
      c0 += v0;
      c1 += v1;
    }
  }
  const unsigned long long half = __shfl_sync(0xffffffffu, c0, 31);
  *sum = half + __shfl_sync(0xffffffffu, c1, 31);
  const unsigned long long e0 = __shfl_sync(0xffffffffu, c0 - m0, part % 32);
  const unsigned long long e1 = __shfl_sync(0xffffffffu, c1 - m1, part % 32);
  *before = part < 32 ? e0 : half + e1;
}

// Block-wide sum (every thread gets it); uses s.wsum.
template <typename Shared>
__device__ unsigned long long BlockSum(unsigned long long v, Shared& s) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) s.wsum[threadIdx.x / 32] = v;
  __syncthreads();
  unsigned long long sum = 0;
  for (int k = 0; k < kFastWarps; ++k) sum += s.wsum[k];
  return sum;
}

template <int kPer>
__global__ void __launch_bounds__(kFastThreads, 1)
    FastSampleKernel(const float* logits, int vocab, const DeviceSampling* params, int32_t* out,
                     int split, int per_thread, FastScratch g) {
  __shared__ FastShared s;
  const int t = threadIdx.x, lane = t % 32, warp = t / 32, copy = warp / 2;
  const int part = blockIdx.x % split;
  const int r = blockIdx.x / split;
  const int first = blockIdx.x - part;
  const int per_block = (vocab + split - 1) / split;
  const int lo = min(vocab, part * per_block);
  const int hi = min(vocab, lo + per_block);
  const DeviceSampling p = params[r];
  FastRowAcc* acc = g.rows + r;
  if (part == 0) {
    uint4* z = reinterpret_cast<uint4*>(acc);
    for (int i = t; i < static_cast<int>(sizeof(FastRowAcc) / 16); i += kFastThreads) {
      z[i] = make_uint4(0, 0, 0, 0);
    }
  }
  const float* row = logits + static_cast<size_t>(p.row) * vocab;
  const int begin = lo + t * per_thread;
  const int end = min(hi, begin + per_thread);
  // Divided, not multiplied by the reciprocal: the host sampler's rounding.
  const bool scale = p.temperature > 0.0f && p.temperature != 1.0f;
  auto value = [&](float x) {
    if (isnan(x)) return -INFINITY;
    return scale ? x / p.temperature : x;
  };

  // The row's max (ties: the lowest id); absent slots hold NaN, which never counts.
  float x[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) x[j] = begin + j < end ? row[begin + j] : NAN;
  float best = -INFINITY;
  int best_id = lo;
  unsigned int live = 0;  // bit j: x[j]'s value > -inf
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const float v = value(x[j]);
    if (v > -INFINITY) live |= 1u << j;
    if (v > best) {
      best = v;
      best_id = begin + j;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, best, o);
    const int oi = __shfl_xor_sync(0xffffffffu, best_id, o);
    if (ov > best || (ov == best && oi < best_id)) {
      best = ov;
      best_id = oi;
    }
  }
  if (lane == 0) {
    s.wv[warp] = best;
    s.wi[warp] = best_id;
  }
  __syncthreads();
  if (t == 0) {
    float bv = s.wv[0];
    int bi = s.wi[0];
    for (int w = 1; w < kFastWarps; ++w) {
      if (s.wv[w] > bv || (s.wv[w] == bv && s.wi[w] < bi)) {
        bv = s.wv[w];
        bi = s.wi[w];
      }
    }
    g.max_v[blockIdx.x] = bv;
    g.max_id[blockIdx.x] = bi;
  }
  cooperative_groups::this_grid().sync();
  float max_v = lane < split ? __ldcg(g.max_v + first + lane) : -INFINITY;
  int max_id = lane < split ? __ldcg(g.max_id + first + lane) : 0x7fffffff;
  if (lane + 32 < split) {
    const float ov = __ldcg(g.max_v + first + lane + 32);
    const int oi = __ldcg(g.max_id + first + lane + 32);
    if (ov > max_v) {  // ids of the second half are higher: ties keep the first
      max_v = ov;
      max_id = oi;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, max_v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, max_id, o);
    if (ov > max_v || (ov == max_v && oi < max_id)) {
      max_v = ov;
      max_id = oi;
    }
  }
  if (max_id == 0x7fffffff) max_id = 0;
  if (p.temperature <= 0.0f || max_v == -INFINITY || max_v == INFINITY) {
    if (part == 0 && t == 0) out[r] = max_id;
    return;
  }
  unsigned int barriers = 0;

  // top-k: the k-th largest finite value (ties at it stay), by radix selection over the
  // logits' keys with counts.
  float kth = -INFINITY;
  if (p.top_k > 0 && p.top_k < vocab) {
    uint32_t prefix = 0;
    unsigned long long above = 0;
    bool found = true;
    for (int b = t; b < kHistCopies * kBins; b += kFastThreads) (&s.hc[0][0])[b] = 0;
    __syncthreads();
    for (int pass = 0; pass < 4; ++pass) {
      const int shift = 24 - 8 * pass;
      const uint32_t hi_mask = pass == 0 ? 0u : (0xffffffffu << (shift + 8));
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        if (!(live >> j & 1u)) continue;
        const uint32_t key = OrderKey(x[j]);
        if ((key & hi_mask) == (prefix & hi_mask))
          atomicAdd(&s.hc[copy][(key >> shift) & 0xff], 1u);
      }
      __syncthreads();
      if (t < kBins) {
        unsigned int c = 0;
#pragma unroll
        for (int k = 0; k < kHistCopies; ++k) c += s.hc[k][t];
        if (c != 0) atomicAdd(&acc->kcount[pass][t], c);
      }
      RowBarrier(&acc->barrier, ++barriers * split);
      if (t < kBins) s.bins[t] = __ldcg(&acc->kcount[pass][t]);
      for (int b = t; b < kHistCopies * kBins; b += kFastThreads) (&s.hc[0][0])[b] = 0;
      __syncthreads();
      if (warp == 0) FindTargetBin64(s, above, static_cast<unsigned long long>(p.top_k));
      __syncthreads();
      if (!s.found) {
        found = false;
        break;
      }
      prefix |= static_cast<uint32_t>(s.digit) << shift;
      above = s.above;
      const unsigned int n = static_cast<unsigned int>(s.bins[s.digit]);
      if (pass < 3 && n <= kMaxCandidates) {
        // Few tokens left in the bin: list them, and find the k-th among them.
        const uint32_t mask = 0xffffffffu << shift;
#pragma unroll
        for (int j = 0; j < kPer; ++j) {
          if (!(live >> j & 1u)) continue;
          const uint32_t key = OrderKey(x[j]);
          if ((key & mask) == prefix) acc->kcand_key[atomicAdd(&acc->kcand_n, 1u)] = key;
        }
        RowBarrier(&acc->barrier, ++barriers * split);
        prefix = ResolveCandidates(lane < n ? __ldcg(acc->kcand_key + lane) : 0u, lane < n ? 1 : 0,
                                   above, static_cast<unsigned long long>(p.top_k));
        break;
      }
    }
    // The selection ran over raw logits: temperature > 0 preserves order, so the k-th key is
    // the k-th token; its scaled value is the threshold.
    if (found) {
      const uint32_t u = (prefix & 0x80000000u) ? (prefix & 0x7fffffffu) : ~prefix;
      const float raw = __uint_as_float(u);
      kth = scale ? raw / p.temperature : raw;
    }
  }

  // Weights of the top-k survivors (their sum is the top-p reference mass), then min-p.
  float w[kPer];
  unsigned long long total = 0;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const float v = value(x[j]);
    w[j] = (v > -INFINITY && v >= kth) ? __expf(v - max_v) : 0.0f;
    total += Fixed(w[j]);
    if (!(w[j] >= p.min_p)) w[j] = 0.0f;
  }

  // top-p: the cut weight over the survivors of top-k and min-p.
  bool has_cut = false;
  uint32_t cut = 0;
  bool masses_known = false;  // the draw's per-block masses (found with the cut)
  unsigned long long sum = 0, block_before = 0;
  if (p.top_p < 1.0f) {
    total = BlockSum(total, s);
    if (t == 0) atomicAdd(&acc->total, total);
    uint32_t prefix = 0;
    unsigned long long above = 0, target = 0;
    bool found = true;
    auto clear = [&] {
      for (int b = t; b < kHistCopies * kBins; b += kFastThreads) {
        (&s.hh[0][0])[b] = 0;
        (&s.hl[0][0])[b] = 0;
        (&s.hc[0][0])[b] = 0;
      }
    };
    clear();
    __syncthreads();
    for (int pass = 0; pass < 4; ++pass) {
      // Digits: the exponent byte (bits 30-23), then bits 22-15, 14-7 and 7-0 (bit 7 is the
      // previous digit's, fixed by the prefix); bits from 31 - 8 * pass up match the prefix.
      const int shift = max(0, 23 - 8 * pass);
      const uint32_t hi_mask = 0xffffffffu << (31 - 8 * pass);
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        if (!(w[j] >= kMinFixed)) continue;
        const uint32_t bits = __float_as_uint(w[j]);
        if ((bits & hi_mask) != (prefix & hi_mask)) continue;
        const int d = (bits >> shift) & 0xff;
        unsigned int h, l;
        FixedParts(w[j], h, l);
        atomicAdd(&s.hh[copy][d], h);
        atomicAdd(&s.hl[copy][d], l);
        atomicAdd(&s.hc[copy][d], 1u);
      }
      __syncthreads();
      if (t < kBins) {
        unsigned long long h = 0, l = 0;
        unsigned int c = 0;
#pragma unroll
        for (int k = 0; k < kHistCopies; ++k) {
          h += s.hh[k][t];
          l += s.hl[k][t];
          c += s.hc[k][t];
        }
        if (c != 0) {
          atomicAdd(&acc->mass[pass][t], (h << 20) + l);
          atomicAdd(&acc->pcount[pass][t], c);
        }
      }
      RowBarrier(&acc->barrier, ++barriers * split);
      if (pass == 0) {
        target = static_cast<unsigned long long>(
            ceil(static_cast<double>(p.top_p) * static_cast<double>(__ldcg(&acc->total))));
      }
      if (t < kBins) {
        s.bins[t] = __ldcg(&acc->mass[pass][t]);
        s.counts[t] = __ldcg(&acc->pcount[pass][t]);
      }
      clear();  // the copies were summed before the barrier
      __syncthreads();
      if (warp == 0) FindTargetBin64(s, above, target);
      __syncthreads();
      if (!s.found) {  // min-p left less than the target: no cut
        found = false;
        break;
      }
      prefix |= static_cast<uint32_t>(s.digit) << shift;
      above = s.above;
      const unsigned int n = s.counts[s.digit];
      if (n == 1) break;  // one token in the bin: its bin's bound is the cut
      if (pass < 3 && n <= kMaxCandidates) {
        // Few tokens left in the bin: list them (with their block), and find the cut among
        // them. Each block also publishes its mass above the bin, so that the same barrier
        // gives every block's final mass: the draw needs no barrier of its own.
        const uint32_t mask = 0xffffffffu << shift;
        unsigned long long above_bin = 0;
#pragma unroll
        for (int j = 0; j < kPer; ++j) {
          if (!(w[j] >= kMinFixed)) continue;
          const uint32_t bits = __float_as_uint(w[j]);
          if ((bits & mask) > prefix) above_bin += Fixed(w[j]);
          if ((bits & mask) != prefix) continue;
          const unsigned int slot = atomicAdd(&acc->pcand_n, 1u);
          acc->pcand_key[slot] = bits;
          acc->pcand_mass[slot] = Fixed(w[j]);
          acc->pcand_part[slot] = part;
        }
        above_bin = BlockSum(above_bin, s);
        if (t == 0) g.draw[blockIdx.x] = above_bin;
        RowBarrier(&acc->barrier, ++barriers * split);
        const uint32_t key = lane < n ? __ldcg(acc->pcand_key + lane) : 0u;
        const unsigned long long m = lane < n ? __ldcg(acc->pcand_mass + lane) : 0ull;
        const int owner = lane < n ? static_cast<int>(__ldcg(acc->pcand_part + lane)) : -1;
        prefix = ResolveCandidates(key, m, above, target);
        // The row's blocks' final masses: above the bin, plus their listed tokens >= the cut.
        unsigned long long m0 = lane < split ? __ldcg(g.draw + first + lane) : 0ull;
        unsigned long long m1 = lane + 32 < split ? __ldcg(g.draw + first + lane + 32) : 0ull;
        for (int j = 0; j < kMaxCandidates; ++j) {
          const uint32_t kj = __shfl_sync(0xffffffffu, key, j);
          const unsigned long long mj = __shfl_sync(0xffffffffu, m, j);
          const int oj = __shfl_sync(0xffffffffu, owner, j);
          if (oj >= 0 && kj >= prefix) {
            if (oj == lane) m0 += mj;
            if (oj == lane + 32) m1 += mj;
          }
        }
        RowPrefix(m0, m1, part, &sum, &block_before);
        masses_known = true;
        break;
      }
    }
    has_cut = found;
    cut = prefix;
  }

  // Draw: the row's final masses in id order (blocks, then threads, then each thread's
  // consecutive tokens); the thread whose tokens hold u x mass walks them.
  unsigned long long mine = 0;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    if (w[j] > 0.0f && (!has_cut || __float_as_uint(w[j]) >= cut)) mine += Fixed(w[j]);
  }
  unsigned long long incl = mine;
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned long long v = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += v;
  }
  __syncthreads();  // s.wsum is reused
  if (lane == 31) s.wsum[warp] = incl;
  __syncthreads();
  unsigned long long before = incl - mine, block_mass = 0;
  for (int k = 0; k < kFastWarps; ++k) {
    if (k < warp) before += s.wsum[k];
    block_mass += s.wsum[k];
  }
  if (!masses_known) {
    if (t == 0) g.draw[blockIdx.x] = block_mass;
    RowBarrier(&acc->barrier, ++barriers * split);
    RowPrefix(lane < split ? __ldcg(g.draw + first + lane) : 0ull,
              lane + 32 < split ? __ldcg(g.draw + first + lane + 32) : 0ull, part, &sum,
              &block_before);
  }
  if (sum == 0) {  // nothing kept (not reached: the max always has mass)
    if (part == 0 && t == 0) out[r] = max_id;
    return;
  }
  unsigned long long point = static_cast<unsigned long long>(p.u * static_cast<double>(sum));
  if (point >= sum) point = sum - 1;
  if (point < block_before || point - block_before >= block_mass) return;
  const unsigned long long local = point - block_before;
  if (mine == 0 || local < before || local - before >= mine) return;
  unsigned long long a = before;
  int pick = -1;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    if (pick < 0 && w[j] > 0.0f && (!has_cut || __float_as_uint(w[j]) >= cut)) {
      a += Fixed(w[j]);
      if (local < a) pick = begin + j;
    }
  }
  out[r] = pick >= 0 ? pick : max_id;
}

// Scratch layout: the reference path's partials, then the fast path's.
constexpr size_t kGrid = 1024;  // split blocks of one launch at most
constexpr size_t kReferenceBytes =
    kGrid * (2 * kBins * sizeof(float) + 2 * sizeof(double) + sizeof(float) + sizeof(int));
constexpr size_t kFastBytes = kGrid * (sizeof(float) + sizeof(int) + sizeof(unsigned long long)) +
                              kMaxFastSampleRows * sizeof(FastRowAcc);

// Blocks per SM that a cooperative launch may count on (0: no cooperative launch).
template <typename Kernel>
int CooperativeCapacity(Kernel kernel, int threads, int dynamic_smem) {
  int device = 0, sms = 0, coop = 0, per_sm = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, dynamic_smem);
  return coop ? std::min(sms, sms * per_sm) : 0;
}

int EnvInt(const char* name, int fallback) {
  const char* e = std::getenv(name);
  return e != nullptr && *e != '\0' ? std::atoi(e) : fallback;
}

}  // namespace

size_t SampleScratchBytes() { return kReferenceBytes + kFastBytes; }

SamplePath LaunchSampleRows(const float* logits, int vocab, const DeviceSampling* params,
                            const DeviceSampling* host_params, int num_rows, int32_t* out,
                            void* scratch, cudaStream_t stream, int max_cached, SamplePath path) {
  if (num_rows <= 0) return SamplePath::kAuto;
  // JISU_SAMPLER=reference: the reference path for every launch (timing comparisons);
  // JISU_SAMPLE_SPLIT: blocks per row on the fast path at most (64; on an H200, one 128K row
  // with top-p took 16.1 us at 64, 16.8 at 48, 17.0 at 32: bench/results/
  // 2026-12-03-cuda-h200-sampler.md).
  static const bool env_reference = [] {
    const char* e = std::getenv("JISU_SAMPLER");
    return e != nullptr && std::strcmp(e, "reference") == 0;
  }();
  static const int env_split =
      std::clamp(EnvInt("JISU_SAMPLE_SPLIT", kFastMaxSplit), 1, kFastMaxSplit);
  if (path != SamplePath::kReference && !env_reference && scratch != nullptr &&
      num_rows <= kMaxFastSampleRows) {
    // Blocks per row: as many as stay resident together (a cooperative launch needs that), at
    // most 64, at least 512 logits each, and few enough that a thread holds at most 16.
    static const int capacity = CooperativeCapacity(FastSampleKernel<16>, kFastThreads, 0);
    int split = std::min(env_split, capacity / num_rows);
    split = std::min(split, (vocab + kFastThreads - 1) / kFastThreads);
    const int per_block = split > 0 ? (vocab + split - 1) / split : 0;
    const int per_thread = (per_block + kFastThreads - 1) / kFastThreads;
    if (split >= 2 && per_thread <= 16) {
      auto* base = static_cast<unsigned char*>(scratch) + kReferenceBytes;
      FastScratch fs;
      fs.max_v = reinterpret_cast<float*>(base);
      fs.max_id = reinterpret_cast<int*>(base + kGrid * sizeof(float));
      fs.draw = reinterpret_cast<unsigned long long*>(base + kGrid * (sizeof(float) + sizeof(int)));
      fs.rows = reinterpret_cast<FastRowAcc*>(
          base + kGrid * (sizeof(float) + sizeof(int) + sizeof(unsigned long long)));
      void* args[] = {const_cast<float**>(&logits),
                      &vocab,
                      const_cast<DeviceSampling**>(&params),
                      &out,
                      &split,
                      const_cast<int*>(&per_thread),
                      &fs};
      void* kernel = per_thread <= 4   ? reinterpret_cast<void*>(FastSampleKernel<4>)
                     : per_thread <= 8 ? reinterpret_cast<void*>(FastSampleKernel<8>)
                                       : reinterpret_cast<void*>(FastSampleKernel<16>);
      if (cudaLaunchCooperativeKernel(kernel, dim3(num_rows * split), dim3(kFastThreads), args, 0,
                                      stream) == cudaSuccess) {
        return SamplePath::kFast;
      }
      cudaGetLastError();  // not launched: the reference path then
    }
  }
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
      return SamplePath::kReference;
    }
    cudaGetLastError();  // not launched: one block per row then
    split = 1;
  }
  SampleRowsKernel<<<num_rows, kThreads, 0, stream>>>(logits, vocab, params, out, 1, partials,
                                                      filters, false);
  return SamplePath::kReference;
}

}  // namespace jisu::cuda
