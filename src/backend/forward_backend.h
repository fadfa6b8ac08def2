// The one interface between the serving loop and whatever computes a forward step: the CPU
// Transformer over a host KvCache, or the CUDA model over KV blocks in GPU memory. A backend
// owns its KV memory: num_kv_blocks() blocks of kv_block_size() token slots, addressed by the
// block tables in each ForwardBatch. Which block belongs to which sequence is the block pool's
// business (kv/), never the backend's, so the scheduler, prefix cache and preemption work the
// same on every device.
// Not thread-safe: one caller at a time (the engine loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "backend/forward_batch.h"
#include "core/function_ref.h"
#include "jisu/status.h"
#include "model/model_config.h"

namespace jisu {

class ThreadPool;

// How one logits row of a step is turned into a token when the backend samples on its device:
// the sampler's filters (penalties and logprobs stay on the host), the request's logit_bias and
// structured-output mask, and the uniform draw in [0, 1) taken from the request's generator.
// temperature 0: greedy.
struct RowSampling {
  bool on_device = false;  // false: the row's logits go to the host
  float temperature = 1.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  double u = 0.0;
  // Structured output: the row's allowed tokens come from ForwardSample's fill_masks; the others
  // get -inf before the draw. Only with on_device.
  bool masked = false;
  // Added to the logits before the draw, in order (the request's logit_bias; it must outlive
  // the ForwardSample call). Only with on_device.
  std::span<const std::pair<int32_t, float>> logit_bias;
};

// Fills the token masks of a step's masked rows (RowSampling::masked): `words` uint32 per row,
// bit id % 32 of word id / 32 set = allowed, the masked rows one after the other in row order.
// ForwardSample calls it once, after queueing the forward pass on the device and before the
// draw, so the host's mask work runs while the device computes the step.
using FillTokenMasksFn = FunctionRef<void(uint32_t* masks, size_t words)>;

class ForwardBackend {
 public:
  virtual ~ForwardBackend() = default;

  virtual const ModelConfig& config() const = 0;
  virtual int64_t num_kv_blocks() const = 0;
  virtual int64_t kv_block_size() const = 0;
  // Bytes of K and V (all layers) one block takes on this backend.
  virtual uint64_t kv_bytes_per_block() const = 0;

  // Runs the batch, writes its K/V into the cache, and fills `logits` (host memory,
  // [batch.logits_rows.size(), vocab_size] float32). Validates the batch first.
  virtual Status Forward(const ForwardBatch& batch, float* logits) = 0;

  // Whether ForwardSample can draw tokens on the device.
  virtual bool CanSample() const { return false; }
  // Forward, then each row r with sampling[r].on_device gets its token in ids[r] and no
  // logits; the other rows' logits go to logits + r * vocab as in Forward. Only token ids
  // cross to the host for device-sampled rows. fill_masks is called once when some row is
  // masked, never otherwise.
  virtual Status ForwardSample(const ForwardBatch& batch, std::span<const RowSampling> sampling,
                               FillTokenMasksFn fill_masks, float* logits, int32_t* ids) {
    (void)batch, (void)sampling, (void)fill_masks, (void)logits, (void)ids;
    return Status::Unsupported("this backend does not sample on its device");
  }
  // The same without masked rows.
  Status ForwardSample(const ForwardBatch& batch, std::span<const RowSampling> sampling,
                       float* logits, int32_t* ids) {
    return ForwardSample(batch, sampling, FillTokenMasksFn([](uint32_t*, size_t) {}), logits, ids);
  }

  // A host buffer of at least `num_floats` floats that Forward copies logits into fastest
  // (pinned memory for a GPU, which halves the copy time of large batches and lets it run as
  // one DMA); valid until the next call. nullptr: any host memory is as good.
  virtual float* HostLogitsBuffer(size_t num_floats) {
    (void)num_floats;
    return nullptr;
  }

  // Whether ForwardBatch::options.matmul selects between numerics here (the CPU's float and
  // int8-activation paths). A backend without (CUDA: one BF16 path) must get kAuto only: the
  // engine refuses other choices at the edge instead of computing something else.
  virtual bool HasMatmulPaths() const { return false; }

  // The backend's own host thread pool when it computes on the host (idle between Forward
  // calls, so the engine samples on it); nullptr for device backends.
  virtual ThreadPool* host_pool() { return nullptr; }

  // For logs and /v1/models: "cpu (avx512, 2 threads)", "cuda:0 (NVIDIA H200)".
  virtual std::string description() const = 0;
};

}  // namespace jisu
