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
#include <string>

#include "jisu/status.h"
#include "model/forward_batch.h"
#include "model/model_config.h"

namespace jisu {

class ThreadPool;

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

  // A host buffer of at least `num_floats` floats that Forward copies logits into fastest
  // (pinned memory for a GPU, which halves the copy time of large batches and lets it run as
  // one DMA); valid until the next call. nullptr: any host memory is as good.
  virtual float* HostLogitsBuffer(size_t num_floats) {
    (void)num_floats;
    return nullptr;
  }

  // The backend's own host thread pool when it computes on the host (idle between Forward
  // calls, so the engine samples on it); nullptr for device backends.
  virtual ThreadPool* host_pool() { return nullptr; }

  // For logs and /v1/models: "cpu (avx512, 2 threads)", "cuda:0 (NVIDIA H200)".
  virtual std::string description() const = 0;
};

}  // namespace jisu
