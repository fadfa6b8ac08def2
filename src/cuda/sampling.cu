// Token sampling on the GPU, one block per logits row, so only token ids cross PCIe. The filters
// follow sampling/sampler.cc: NaN logits never win; temperature; top-k keeps every token equal
// to the k-th value; min-p keeps weights exp(v - max) >= min_p; top-p keeps tokens in
// descending order while the mass before them is below top_p x (mass of the top-k survivors);
// the draw uses a uniform number from the request's own generator (drawn on the host, so a
// seed gives the same sequence of draws on every device).
//
// Thresholds are found by radix selection over the logits' order-preserving 32-bit keys (four
// passes of 8 bits, histograms in shared memory), never by sorting the vocabulary. Two
// departures from the host sampler, both at exact float ties only: top-p keeps every token
// equal to the cut value (the host keeps ties in id order until the mass is reached), and the
// draw walks kept tokens in id order (the host walks its candidate order); the distribution
// drawn from is the same.
#include <cmath>
#include <cstdint>

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

// The largest key t such that the weight of kept tokens with key > t is below `target` and
// with key >= t reaches it (count weights: the target-th largest). found = 0 when the kept
// weight never reaches the target. `weight(i, v)` is the token's weight (0 = not kept).
template <typename Weight>
__device__ uint32_t RadixSelect(const float* v, int vocab, double target, Weight weight,
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
    for (int i = threadIdx.x; i < vocab; i += kThreads) {
      const float x = v[i];
      const float w = weight(i, x);
      if (w <= 0.0f) continue;
      const uint32_t key = OrderKey(x);
      if ((key & hi_mask) != (prefix & hi_mask)) continue;
      atomicAdd(&my_bins[(key >> shift) & 0xff], w);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < kBins; b += kThreads) {
      float sum = 0.0f;
      for (int w = 0; w < kThreads / 32; ++w) sum += s.wbin[w][b];
      s.fbin[b] = sum;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      double above = s.mass_above;
      int d = kBins - 1;
      for (; d >= 0; --d) {
        if (above + s.fbin[d] >= target) break;
        above += s.fbin[d];
      }
      if (d < 0) {
        s.found = 0;  // rounding: the target is not reached
        d = 0;
      }
      s.mass_above = above;
      s.prefix = prefix | (static_cast<uint32_t>(d) << shift);
    }
    __syncthreads();
    if (!s.found) break;
  }
  __syncthreads();
  *found = s.found != 0;
  return s.prefix;
}

__global__ void __launch_bounds__(kThreads)
    SampleRowsKernel(const float* logits, int vocab, const DeviceSampling* params, int32_t* out) {
  __shared__ BlockScratch s;
  const DeviceSampling p = params[blockIdx.x];
  const float* row = logits + static_cast<size_t>(p.row) * vocab;

  // Greedy, and the max for every other path.
  // Divided, not multiplied by the reciprocal: the host sampler's rounding.
  const bool scale = p.temperature > 0.0f && p.temperature != 1.0f;
  float best = -INFINITY;
  int best_id = 0;
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    float x = row[i];
    if (isnan(x)) x = -INFINITY;
    if (scale) x /= p.temperature;
    if (x > best) {  // strided ids ascend per thread: ties keep the lowest
      best = x;
      best_id = i;
    }
  }
  float max_v;
  int max_id;
  BlockArgMax(best, best_id, s, &max_v, &max_id);
  if (p.temperature <= 0.0f || max_v == -INFINITY || max_v == INFINITY) {
    if (threadIdx.x == 0) out[blockIdx.x] = max_id;
    return;
  }
  auto value = [&](int i) {
    const float x = row[i];
    if (isnan(x)) return -INFINITY;
    return scale ? x / p.temperature : x;
  };

  // top-k: the k-th largest finite value (ties at it stay).
  float kth = -INFINITY;
  if (p.top_k > 0 && p.top_k < vocab) {
    bool found = false;
    const uint32_t key = RadixSelect(
        row, vocab, static_cast<double>(p.top_k),
        [&](int i, float) { return value(i) > -INFINITY ? 1.0f : 0.0f; }, s, &found);
    // The selection ran over raw logits: temperature > 0 preserves order, so the k-th key is
    // the k-th token; its scaled value is the threshold.
    if (found) {
      const uint32_t u = (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
      const float raw = __uint_as_float(u);
      kth = scale ? raw / p.temperature : raw;
    }
  }
  auto topk_weight = [&](int i) {
    const float x = value(i);
    return (x > -INFINITY && x >= kth) ? __expf(x - max_v) : 0.0f;
  };
  double total = 0;
  for (int i = threadIdx.x; i < vocab; i += kThreads) total += topk_weight(i);
  total = BlockSumD(total, s);
  auto kept_weight = [&](int i) {
    const float w = topk_weight(i);
    return w >= p.min_p ? w : 0.0f;
  };

  // top-p: the cut key over the weights that survive top-k and min-p.
  bool has_cut = false;
  uint32_t cut = 0;
  if (p.top_p < 1.0f) {
    bool found = false;
    cut = RadixSelect(
        row, vocab, static_cast<double>(p.top_p) * total,
        [&](int i, float) { return kept_weight(i); }, s, &found);
    has_cut = found;
  }
  auto final_weight = [&](int i) {
    const float w = kept_weight(i);
    if (w <= 0.0f) return 0.0f;
    return (!has_cut || OrderKey(row[i]) >= cut) ? w : 0.0f;
  };

  // Draw: contiguous id ranges per thread, an exclusive scan of their masses, and the thread
  // whose range holds u x mass walks it.
  const int per = (vocab + kThreads - 1) / kThreads;
  const int begin = min(vocab, threadIdx.x * per);
  const int end = min(vocab, begin + per);
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
  const double sum = scan[kThreads - 1];
  const double x = p.u * sum;
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
  if (threadIdx.x == 0) out[blockIdx.x] = s.found >= 0 ? s.found : max_id;
}

}  // namespace

void LaunchSampleRows(const float* logits, int vocab, const DeviceSampling* params, int num_rows,
                      int32_t* out, cudaStream_t stream) {
  if (num_rows <= 0) return;
  SampleRowsKernel<<<num_rows, kThreads, 0, stream>>>(logits, vocab, params, out);
}

}  // namespace jisu::cuda
