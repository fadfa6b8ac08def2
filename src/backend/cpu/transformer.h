// The CPU backend's forward pass: executes a model's layer program (model/layer_program.h)
// over float32 activations, weights in any supported type. Every call takes a ForwardBatch:
// several sequences' new tokens at once (prefill chunks and decode tokens mixed), writes their
// K/V into the paged cache and returns logits for the requested rows. Per-token ops run inside
// the next product's activation pass (ActProducer), so a layer has one parallel section per
// product and one for attention, whatever the architecture. Scratch buffers are owned here and
// grow to the largest batch seen, so a decode step allocates nothing.
// Not thread-safe: one caller at a time (the engine loop).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/forward_batch.h"
#include "core/thread_pool.h"
#include "jisu/status.h"
#include "kv/kv_cache.h"
#include "model/layer_program.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace jisu {

class Transformer {
 public:
  // config and weights must outlive this object.
  Transformer(const ModelConfig& config, const ModelWeights& weights, ThreadPool& pool);

  // logits: [batch.logits_rows.size(), vocab_size]. Validates the batch (token ids in range,
  // block tables long enough, positions within the context).
  Status Forward(const ForwardBatch& batch, KvCache& cache, float* logits);

  const ModelConfig& config() const { return config_; }
  const ModelProgram& program() const { return program_; }
  ThreadPool& pool() { return pool_; }

 private:
  Status ValidateBatch(const ForwardBatch& batch, const KvCache& cache) const;
  void EnsureCapacity(int64_t num_tokens, int64_t max_context);
  int64_t Dim(Buf b) const { return dims_[static_cast<size_t>(b)]; }
  float* Row(Buf b, int64_t t) { return bufs_[static_cast<size_t>(b)].data() + t * Dim(b); }
  struct PendingOp {
    const Op* op;
    int64_t layer;
  };
  // Runs per-token ops on tokens [t0, t1); with store_kv_layer >= 0 it then writes each token's
  // K/V into that layer's cache slots.
  void RunTokenOps(std::span<const PendingOp> ops, int64_t t0, int64_t t1,
                   const ForwardBatch& batch, KvCache& cache, int64_t store_kv_layer);
  void Attention(const ForwardBatch& batch, int64_t layer, KvCache& cache);

  const ModelConfig& config_;
  const ModelWeights& weights_;
  ThreadPool& pool_;
  ModelProgram program_;
  std::array<int64_t, static_cast<size_t>(Buf::kCount)> dims_{};

  // Scratch, [capacity_tokens, dim].
  int64_t capacity_tokens_ = 0;
  std::array<std::vector<float>, static_cast<size_t>(Buf::kCount)> bufs_;
  // Per rope table: each token's angles [T, head_dim/2], computed once for every layer.
  std::vector<std::vector<float>> rope_cos_, rope_sin_;
  std::vector<int64_t> token_seq_;  // [T] sequence index of each token
  std::vector<int64_t> token_pos_;  // [T] position of each token
  std::vector<float> head_out_;     // [rows, hidden] final-normed rows for the head
  std::vector<PendingOp> pending_;  // per-token ops not run yet (see Forward)
  int64_t capacity_context_ = 0;
  std::vector<float> scores_;  // [num_threads, heads per KV group, capacity_context]
};

}  // namespace jisu
