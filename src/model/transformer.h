// The forward pass of a Llama-family decoder on the CPU (float32 activations, weights in any
// supported type). One implementation for Llama/Mistral/Qwen2, parameterized by ModelConfig.
// Every call takes a ForwardBatch: several sequences' new tokens at once (prefill chunks and
// decode tokens mixed), writes their K/V into the paged cache and returns logits for the
// requested rows. Scratch buffers are owned here and grow to the largest batch seen, so a
// decode step allocates nothing.
// Not thread-safe: one caller at a time (the engine loop).
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "jisu/status.h"
#include "kv/kv_cache.h"
#include "model/forward_batch.h"
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
  ThreadPool& pool() { return pool_; }

 private:
  Status ValidateBatch(const ForwardBatch& batch, const KvCache& cache) const;
  void EnsureCapacity(int64_t num_tokens, int64_t max_context);
  void Attention(const ForwardBatch& batch, int64_t layer, KvCache& cache);

  const ModelConfig& config_;
  const ModelWeights& weights_;
  ThreadPool& pool_;
  std::vector<float> inv_freq_;  // [head_dim/2]

  // Scratch, [capacity_tokens, ...].
  int64_t capacity_tokens_ = 0;
  std::vector<float> x_;            // residual stream [T, hidden]
  std::vector<float> xn_;           // normed [T, hidden]
  std::vector<float> q_;            // [T, q_dim]
  std::vector<float> k_;            // [T, kv_dim]
  std::vector<float> v_;            // [T, kv_dim]
  std::vector<float> attn_;         // [T, q_dim]
  std::vector<float> gate_;         // [T, ffn]
  std::vector<float> up_;           // [T, ffn]
  std::vector<float> rope_cos_;     // [T, head_dim/2]: each token's angles, for every layer
  std::vector<float> rope_sin_;     // [T, head_dim/2]
  std::vector<int64_t> token_seq_;  // [T] sequence index of each token
  std::vector<int64_t> token_pos_;  // [T] position of each token
  int64_t capacity_context_ = 0;
  std::vector<float> scores_;  // [num_threads, heads per KV group, capacity_context]
};

}  // namespace jisu
