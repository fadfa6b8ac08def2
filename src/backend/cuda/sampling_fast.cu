// The fast device sampler (see sampling.cu for the filters it implements), for launches of at
// most kMaxFastSampleRows rows.
//
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
#include <cooperative_groups.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "backend/cuda/kernels.h"
#include "backend/cuda/sampling_internal.cuh"

namespace jisu::cuda::sampling {
namespace {

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

constexpr size_t kFastBytes = kGrid * (sizeof(float) + sizeof(int) + sizeof(unsigned long long)) +
                              kMaxFastSampleRows * sizeof(FastRowAcc);

int EnvInt(const char* name, int fallback) {
  const char* e = std::getenv(name);
  return e != nullptr && *e != '\0' ? std::atoi(e) : fallback;
}

}  // namespace

size_t FastScratchBytes() { return kFastBytes; }

bool LaunchFastSample(const float* logits, int vocab, const DeviceSampling* params, int num_rows,
                      int32_t* out, void* scratch, cudaStream_t stream) {
  // JISU_SAMPLE_SPLIT: blocks per row at most (64; on an H200, one 128K row with top-p took
  // 16.1 us at 64, 16.8 at 48, 17.0 at 32: bench/results/2026-12-03-cuda-h200-sampler.md).
  static const int env_split =
      std::clamp(EnvInt("JISU_SAMPLE_SPLIT", kFastMaxSplit), 1, kFastMaxSplit);
  // Blocks per row: as many as stay resident together (a cooperative launch needs that), at
  // most 64, at least 512 logits each, and few enough that a thread holds at most 16.
  static const int capacity = CooperativeCapacity(FastSampleKernel<16>, kFastThreads, 0);
  int split = std::min(env_split, capacity / num_rows);
  split = std::min(split, (vocab + kFastThreads - 1) / kFastThreads);
  const int per_block = split > 0 ? (vocab + split - 1) / split : 0;
  const int per_thread = (per_block + kFastThreads - 1) / kFastThreads;
  if (split >= 2 && per_thread <= 16) {
    auto* base = static_cast<unsigned char*>(scratch);
    FastScratch fs;
    fs.max_v = reinterpret_cast<float*>(base);
    fs.max_id = reinterpret_cast<int*>(base + kGrid * sizeof(float));
    fs.draw = reinterpret_cast<unsigned long long*>(base + kGrid * (sizeof(float) + sizeof(int)));
    fs.rows = reinterpret_cast<FastRowAcc*>(
        base + kGrid * (sizeof(float) + sizeof(int) + sizeof(unsigned long long)));
    void* args[] = {
        const_cast<float**>(&logits),  &vocab, const_cast<DeviceSampling**>(&params), &out, &split,
        const_cast<int*>(&per_thread), &fs};
    void* kernel = per_thread <= 4   ? reinterpret_cast<void*>(FastSampleKernel<4>)
                   : per_thread <= 8 ? reinterpret_cast<void*>(FastSampleKernel<8>)
                                     : reinterpret_cast<void*>(FastSampleKernel<16>);
    if (cudaLaunchCooperativeKernel(kernel, dim3(num_rows * split), dim3(kFastThreads), args, 0,
                                    stream) == cudaSuccess) {
      return true;
    }
    cudaGetLastError();  // not launched: the reference path then
  }
  return false;
}

}  // namespace jisu::cuda::sampling
