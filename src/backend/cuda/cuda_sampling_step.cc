// The CUDA backend's sampling hand-off, after a step's forward pass is queued: rows drawn on the
// device (their logit_bias and structured-output masks applied there first) and the logits of
// the host's rows copied out.
//
// Masks: the engine fills them on the host (FillTokenMasksFn) while the device runs the forward
// pass, into a pinned staging buffer; one copy on a side stream brings them (with the rows they
// apply to and the logit_bias entries) to a device buffer, so the copy overlaps the forward pass
// too, and the stream waits for it only before the masking kernel. As xgrammar/vLLM do it: the
// mask is the packed vocab/32 bitmask the host matcher produces, and the device only applies it.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "backend/cuda/cuda_backend_impl.h"

namespace jisu::cuda_detail {

namespace {

size_t Align16(size_t n) { return (n + 15) & ~size_t{15}; }

}  // namespace

Status CudaBackend::EnsureSampleBuffers(size_t rows) {
  if (rows <= sample_cap_) return Status::Ok();
  const size_t cap = std::max(rows, sample_cap_ * 2);
  if (sample_host_) cudaFreeHost(sample_host_);
  if (ids_host_) cudaFreeHost(ids_host_);
  sample_host_ = nullptr;
  ids_host_ = nullptr;
  sample_cap_ = 0;
  JISU_CUDA_RETURN(
      cudaMallocHost(reinterpret_cast<void**>(&sample_host_), cap * sizeof(cuda::DeviceSampling)));
  JISU_CUDA_RETURN(cudaMallocHost(reinterpret_cast<void**>(&ids_host_), cap * sizeof(int32_t)));
  JISU_RETURN_IF_ERROR(sample_dev_.Resize(cap * sizeof(cuda::DeviceSampling)));
  JISU_RETURN_IF_ERROR(ids_dev_.Resize(cap * sizeof(int32_t)));
  if (sample_scratch_.size() == 0) {
    JISU_RETURN_IF_ERROR(sample_scratch_.Resize(cuda::SampleScratchBytes()));
  }
  sample_cap_ = cap;
  return Status::Ok();
}

Status CudaBackend::EnsureConstraintBuffers(size_t bytes) {
  if (bytes <= constraint_cap_) return Status::Ok();
  const size_t cap = std::max(bytes, constraint_cap_ * 2);
  if (constraint_host_) cudaFreeHost(constraint_host_);
  constraint_host_ = nullptr;
  constraint_cap_ = 0;
  JISU_CUDA_RETURN(cudaMallocHost(reinterpret_cast<void**>(&constraint_host_), cap));
  JISU_RETURN_IF_ERROR(constraint_dev_.Resize(cap));
  if (!copy_stream_) {
    JISU_CUDA_RETURN(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
    JISU_CUDA_RETURN(cudaEventCreateWithFlags(&constraints_copied_, cudaEventDisableTiming));
  }
  constraint_cap_ = cap;
  return Status::Ok();
}

Status CudaBackend::ForwardSample(const ForwardBatch& batch, std::span<const RowSampling> sampling,
                                  FillTokenMasksFn fill_masks, float* logits, int32_t* ids) {
  if (sampling.size() != batch.logits_rows.size()) {
    return Status::InvalidArgument("cuda backend: one sampling entry per logits row expected");
  }
  const int64_t vocab = config_.vocab_size;
  for (const RowSampling& r : sampling) {
    if (!r.on_device) {
      if (r.masked || !r.logit_bias.empty()) {
        return Status::InvalidArgument(
            "cuda backend: a token mask or logit_bias on a row drawn on the host");
      }
      continue;
    }
    if (!(r.temperature >= 0.0f) || !std::isfinite(r.temperature) || !(r.top_p > 0.0f) ||
        r.top_p > 1.0f || !(r.min_p >= 0.0f) || r.min_p > 1.0f || r.top_k < 0 || !(r.u >= 0.0) ||
        r.u >= 1.0) {
      return Status::InvalidArgument("cuda backend: bad device sampling parameters");
    }
    for (const auto& [id, bias] : r.logit_bias) {
      if (id < 0 || id >= vocab || !std::isfinite(bias)) {
        return Status::InvalidArgument("cuda backend: bad logit_bias entry");
      }
    }
  }
  return Run(batch, sampling, fill_masks, logits, ids);
}

Status CudaBackend::ApplyRowConstraints(std::span<const RowSampling> sampling,
                                        FillTokenMasksFn fill_masks) {
  const int vocab = static_cast<int>(config_.vocab_size);
  int masked = 0, bias_rows = 0;
  size_t entries = 0;
  for (const RowSampling& r : sampling) {
    if (!r.on_device) continue;
    masked += r.masked ? 1 : 0;
    if (!r.logit_bias.empty()) {
      ++bias_rows;
      entries += r.logit_bias.size();
    }
  }
  if (masked == 0 && bias_rows == 0) return Status::Ok();
  // One staging area, one copy: [mask rows][masks][bias rows][bias entries].
  const size_t words = (static_cast<size_t>(vocab) + 31) / 32;
  const size_t off_masks = Align16(masked * sizeof(int32_t));
  const size_t off_bias_rows = Align16(off_masks + masked * words * sizeof(uint32_t));
  const size_t off_entries = Align16(off_bias_rows + bias_rows * sizeof(cuda::DeviceBiasRow));
  const size_t bytes = off_entries + entries * sizeof(cuda::DeviceBiasEntry);
  JISU_RETURN_IF_ERROR(EnsureConstraintBuffers(bytes));
  unsigned char* host = constraint_host_;
  auto* mask_rows = reinterpret_cast<int32_t*>(host);
  auto* brows = reinterpret_cast<cuda::DeviceBiasRow*>(host + off_bias_rows);
  auto* bentries = reinterpret_cast<cuda::DeviceBiasEntry*>(host + off_entries);
  int m = 0, b = 0, e = 0;
  for (size_t r = 0; r < sampling.size(); ++r) {
    const RowSampling& rs = sampling[r];
    if (!rs.on_device) continue;
    if (rs.masked) mask_rows[m++] = static_cast<int32_t>(r);
    if (rs.logit_bias.empty()) continue;
    brows[b++] = {static_cast<int32_t>(r), e, static_cast<int32_t>(rs.logit_bias.size())};
    for (const auto& [id, bias] : rs.logit_bias) bentries[e++] = {id, bias};
  }
  // The forward pass is queued on stream_ (Run): the host fills the masks meanwhile.
  if (masked > 0) fill_masks(reinterpret_cast<uint32_t*>(host + off_masks), words);
  JISU_CUDA_RETURN(
      cudaMemcpyAsync(constraint_dev_.get(), host, bytes, cudaMemcpyHostToDevice, copy_stream_));
  JISU_CUDA_RETURN(cudaEventRecord(constraints_copied_, copy_stream_));
  JISU_CUDA_RETURN(cudaStreamWaitEvent(stream_, constraints_copied_, 0));
  unsigned char* dev = static_cast<unsigned char*>(constraint_dev_.get());
  // Bias first, as the host sampler: a masked id stays -inf whatever its bias.
  cuda::LaunchAddLogitBias(
      logits_.as<float>(), vocab, reinterpret_cast<const cuda::DeviceBiasRow*>(dev + off_bias_rows),
      bias_rows, reinterpret_cast<const cuda::DeviceBiasEntry*>(dev + off_entries), stream_);
  cuda::LaunchApplyTokenMasks(
      logits_.as<float>(), vocab, reinterpret_cast<const uint32_t*>(dev + off_masks),
      static_cast<int>(words), reinterpret_cast<const int32_t*>(dev), masked, stream_);
  Mark("token_masks");
  return Status::Ok();
}

Status CudaBackend::SampleRows(std::span<const RowSampling> sampling, FillTokenMasksFn fill_masks,
                               float* logits, int* num_device) {
  const int64_t R = static_cast<int64_t>(sampling.size());
  const int64_t vocab = config_.vocab_size;
  JISU_RETURN_IF_ERROR(EnsureSampleBuffers(static_cast<size_t>(R)));
  int n = 0;
  for (int64_t r = 0; r < R; ++r) {
    const RowSampling& rs = sampling[r];
    if (!rs.on_device) continue;
    cuda::DeviceSampling& d = sample_host_[n++];
    d.row = static_cast<int32_t>(r);
    d.temperature = rs.temperature;
    d.top_k = rs.top_k;
    d.top_p = rs.top_p;
    d.min_p = rs.min_p;
    d.u = rs.u;
  }
  *num_device = n;
  JISU_RETURN_IF_ERROR(ApplyRowConstraints(sampling, fill_masks));
  if (n > 0) {
    JISU_CUDA_RETURN(cudaMemcpyAsync(sample_dev_.get(), sample_host_,
                                     n * sizeof(cuda::DeviceSampling), cudaMemcpyHostToDevice,
                                     stream_));
    cuda::LaunchSampleRows(
        logits_.as<float>(), static_cast<int>(vocab), sample_dev_.as<cuda::DeviceSampling>(),
        sample_host_, n, ids_dev_.as<int32_t>(), sample_scratch_.get(), stream_, -1,
        options_.reference_sampler ? cuda::SamplePath::kReference : cuda::SamplePath::kAuto);
    JISU_CUDA_RETURN(cudaMemcpyAsync(ids_host_, ids_dev_.get(), n * sizeof(int32_t),
                                     cudaMemcpyDeviceToHost, stream_));
  }
  // Host rows' logits, consecutive rows in one copy.
  for (int64_t r = 0; r < R;) {
    if (sampling[r].on_device) {
      ++r;
      continue;
    }
    int64_t e = r;
    while (e < R && !sampling[e].on_device) ++e;
    JISU_CUDA_RETURN(cudaMemcpyAsync(logits + r * vocab, logits_.as<float>() + r * vocab,
                                     (e - r) * vocab * 4, cudaMemcpyDeviceToHost, stream_));
    r = e;
  }
  return Status::Ok();
}

}  // namespace jisu::cuda_detail
