// Structured output's token masks and logit_bias applied to the logits on the device, right
// before the sampler draws (sampling.cu), so a constrained or biased row is drawn on the device
// like any other and only its token id crosses to the host. Separate small kernels rather than a
// step inside the samplers: the two sampling paths keep one contract (logits in, ids out), and
// the extra pass is a write of the disallowed ids only (~10 us for 64 rows of 128K tokens).
#include <cmath>
#include <cstdint>

#include "backend/cuda/kernels.h"

namespace jisu::cuda {
namespace {

constexpr int kMaskThreads = 256;

// One thread per token id: the 32 threads of a warp share one mask word (one broadcast load),
// and the stores of a warp's disallowed ids are coalesced.
__global__ void ApplyTokenMasksKernel(float* logits, int vocab, const uint32_t* masks, int words,
                                      const int32_t* rows, int num_rows) {
  const int id = blockIdx.x * blockDim.x + threadIdx.x;
  if (id >= vocab) return;
  for (int m = blockIdx.y; m < num_rows; m += gridDim.y) {
    const uint32_t w = __ldg(masks + static_cast<size_t>(m) * words + (id >> 5));
    if (!((w >> (id & 31)) & 1u)) {
      logits[static_cast<size_t>(__ldg(rows + m)) * vocab + id] = -INFINITY;
    }
  }
}

// One thread per row, its entries in order: the same float additions, in the same order, as the
// host sampler's (repeated ids included), so a biased greedy row picks what the host picks.
__global__ void AddLogitBiasKernel(float* logits, int vocab, const DeviceBiasRow* rows,
                                   int num_rows, const DeviceBiasEntry* entries) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= num_rows) return;
  const DeviceBiasRow b = rows[r];
  float* row = logits + static_cast<size_t>(b.row) * vocab;
  for (int i = b.begin; i < b.begin + b.count; ++i) {
    const DeviceBiasEntry e = entries[i];
    if (e.id >= 0 && e.id < vocab) row[e.id] += e.bias;
  }
}

}  // namespace

void LaunchApplyTokenMasks(float* logits, int vocab, const uint32_t* masks, int words,
                           const int32_t* rows, int num_rows, cudaStream_t stream) {
  if (num_rows <= 0 || vocab <= 0) return;
  const dim3 grid((vocab + kMaskThreads - 1) / kMaskThreads, num_rows < 65535 ? num_rows : 65535);
  ApplyTokenMasksKernel<<<grid, kMaskThreads, 0, stream>>>(logits, vocab, masks, words, rows,
                                                           num_rows);
}

void LaunchAddLogitBias(float* logits, int vocab, const DeviceBiasRow* rows, int num_rows,
                        const DeviceBiasEntry* entries, cudaStream_t stream) {
  if (num_rows <= 0) return;
  AddLogitBiasKernel<<<(num_rows + 127) / 128, 128, 0, stream>>>(logits, vocab, rows, num_rows,
                                                                 entries);
}

}  // namespace jisu::cuda
