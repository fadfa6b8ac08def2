// What the two device samplers share, for the three files of the sampler only: sampling.cu
// (LaunchSampleRows: picks a path, owns the scratch layout), sampling_reference.cu (any number
// of rows) and sampling_fast.cu (few rows). The order-preserving float key and histogram width
// both radix selections use, the cooperative-launch capacity query, and each path's scratch
// size and launcher.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/kernels.h"

namespace jisu::cuda::sampling {

constexpr int kBins = 256;
constexpr size_t kGrid = 1024;  // split blocks of one launch at most

__device__ __forceinline__ uint32_t OrderKey(float v) {
  const uint32_t u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

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

// Reference path (sampling_reference.cu): scratch bytes it uses at the start of the sampler's
// scratch, and the launch; always launches (one block per row when it cannot split).
size_t ReferenceScratchBytes();
void LaunchReferenceSample(const float* logits, int vocab, const DeviceSampling* params,
                           const DeviceSampling* host_params, int num_rows, int32_t* out,
                           void* scratch, cudaStream_t stream, int max_cached);

// Fast path (sampling_fast.cu): scratch bytes it uses (after the reference path's), and the
// launch of at most kMaxFastSampleRows rows; false when it does not apply or did not launch.
size_t FastScratchBytes();
bool LaunchFastSample(const float* logits, int vocab, const DeviceSampling* params, int num_rows,
                      int32_t* out, void* scratch, cudaStream_t stream);

}  // namespace jisu::cuda::sampling
