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
// Two implementations: the fast path (sampling_fast.cu) for launches of few rows, and the
// reference path (sampling_reference.cu) for any number of rows. This file picks one per
// launch and lays out their shared scratch buffer.
#include "backend/cuda/kernels.h"
#include "backend/cuda/sampling_internal.cuh"

namespace jisu::cuda {

// Scratch layout: the reference path's partials, then the fast path's.
size_t SampleScratchBytes() {
  return sampling::ReferenceScratchBytes() + sampling::FastScratchBytes();
}

SamplePath LaunchSampleRows(const float* logits, int vocab, const DeviceSampling* params,
                            const DeviceSampling* host_params, int num_rows, int32_t* out,
                            void* scratch, cudaStream_t stream, int max_cached, SamplePath path) {
  if (num_rows <= 0) return SamplePath::kAuto;
  if (path != SamplePath::kReference && scratch != nullptr && num_rows <= kMaxFastSampleRows) {
    void* fast_scratch = static_cast<unsigned char*>(scratch) + sampling::ReferenceScratchBytes();
    if (sampling::LaunchFastSample(logits, vocab, params, num_rows, out, fast_scratch, stream)) {
      return SamplePath::kFast;
    }
  }
  sampling::LaunchReferenceSample(logits, vocab, params, host_params, num_rows, out, scratch,
                                  stream, max_cached);
  return SamplePath::kReference;
}

}  // namespace jisu::cuda
