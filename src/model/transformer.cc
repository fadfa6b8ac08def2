#include "model/transformer.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/quant.h"

namespace jisu {

Transformer::Transformer(const ModelConfig& config, const ModelWeights& weights, ThreadPool& pool)
    : config_(config), weights_(weights), pool_(pool), inv_freq_(RopeInverseFrequencies(config)) {
  if (weights.rope_freq_factors) {
    for (size_t i = 0; i < inv_freq_.size(); ++i) inv_freq_[i] /= (*weights.rope_freq_factors)[i];
  }
}

Status Transformer::ValidateBatch(const ForwardBatch& batch, const KvCache& cache) const {
  const KvCacheShape& kv = cache.shape();
  if (kv.num_layers != config_.num_layers || kv.num_kv_heads != config_.num_kv_heads ||
      kv.head_dim != config_.head_dim) {
    return Status::InvalidArgument("KV cache shape does not match the model");
  }
  return ValidateForwardBatch(batch, config_.max_position, config_.vocab_size, kv.block_size,
                              kv.num_blocks);
}

void Transformer::EnsureCapacity(int64_t num_tokens, int64_t max_context) {
  if (num_tokens > capacity_tokens_) {
    const int64_t t = std::max(num_tokens, capacity_tokens_ * 2);
    x_.resize(t * config_.hidden_size);
    xn_.resize(t * config_.hidden_size);
    q_.resize(t * config_.q_dim());
    k_.resize(t * config_.kv_dim());
    v_.resize(t * config_.kv_dim());
    attn_.resize(t * config_.q_dim());
    gate_.resize(t * config_.intermediate_size);
    up_.resize(t * config_.intermediate_size);
    rope_cos_.resize(t * config_.head_dim / 2);
    rope_sin_.resize(t * config_.head_dim / 2);
    token_seq_.resize(t);
    token_pos_.resize(t);
    capacity_tokens_ = t;
  }
  if (max_context > capacity_context_) {
    capacity_context_ = std::max(max_context, capacity_context_ * 2);
    scores_.resize(static_cast<size_t>(pool_.num_threads()) *
                   (config_.num_heads / config_.num_kv_heads) * capacity_context_);
  }
}

void Transformer::Attention(const ForwardBatch& batch, int64_t layer, KvCache& cache) {
  const int64_t num_tokens = batch.num_tokens();
  const int64_t head_dim = config_.head_dim;
  const int64_t group = config_.num_heads / config_.num_kv_heads;
  const int64_t q_dim = config_.q_dim();
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  // One work item = one token and one KV head with the `group` query heads that share it, so
  // each key row is read once for the whole group.
  const int64_t num_items = num_tokens * config_.num_kv_heads;
  const int num_threads = pool_.num_threads();
  const int64_t stride = capacity_context_;  // scores of one query head

  // Items are claimed a few at a time, not split evenly up front: their cost grows with each
  // sequence's context, and a thread that the OS descheduled must not hold up the step.
  const int64_t chunk = std::max<int64_t>(1, num_items / (8 * num_threads));
  std::atomic<int64_t> next{0};
  pool_.RunOnAll([&](int thread) {
    float* scores = scores_.data() + static_cast<size_t>(thread) * group * stride;
    for (int64_t begin; (begin = next.fetch_add(chunk, std::memory_order_relaxed)) < num_items;) {
      const int64_t end = std::min(num_items, begin + chunk);
      for (int64_t item = begin; item < end; ++item) {
        const int64_t t = item / config_.num_kv_heads;
        const int64_t kv_head = item % config_.num_kv_heads;
        const BatchSequence& seq = batch.sequences[token_seq_[t]];
        const int64_t pos = token_pos_[t];
        int64_t first = 0;
        if (config_.sliding_window) first = std::max<int64_t>(0, pos - *config_.sliding_window + 1);
        const float* q = q_.data() + t * q_dim + kv_head * group * head_dim;
        PagedKvHead kv = cache.Head(layer, kv_head);
        kv.block_table = seq.block_table.data();
        AttendPaged(q, group, head_dim, scale, kv, first, pos, scores, stride,
                    attn_.data() + t * q_dim + kv_head * group * head_dim);
      }
    }
  });
}

Status Transformer::Forward(const ForwardBatch& batch, KvCache& cache, float* logits) {
  JISU_RETURN_IF_ERROR(ValidateBatch(batch, cache));
  const int64_t num_tokens = batch.num_tokens();
  if (num_tokens == 0) return Status::Ok();
  int64_t max_context = 0;
  for (const BatchSequence& s : batch.sequences) {
    max_context = std::max(max_context, s.start_position + s.num_tokens);
  }
  EnsureCapacity(num_tokens, max_context);

  const ModelConfig& c = config_;
  const int64_t hidden = c.hidden_size;
  const int64_t q_dim = c.q_dim();
  const int64_t kv_dim = c.kv_dim();
  const int64_t ffn = c.intermediate_size;
  const int64_t block_size = cache.shape().block_size;
  {
    int64_t t = 0;
    for (size_t s = 0; s < batch.sequences.size(); ++s) {
      for (int64_t i = 0; i < batch.sequences[s].num_tokens; ++i, ++t) {
        token_seq_[t] = static_cast<int64_t>(s);
        token_pos_[t] = batch.sequences[s].start_position + i;
      }
    }
  }

  const WeightMatrix& emb = weights_.embedding;
  const int64_t half = c.head_dim / 2;
  pool_.ParallelFor(num_tokens, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const auto* row = static_cast<const uint8_t*>(emb.data) + batch.token_ids[t] * emb.row_bytes;
      DequantizeRow(emb.dtype, row, x_.data() + t * hidden, hidden);
      RopeAngles(token_pos_[t], inv_freq_.data(), half, rope_cos_.data() + t * half,
                 rope_sin_.data() + t * half);
    }
  });

  // The residual adds, norms and the SwiGLU run inside the next product's activation pass
  // (ActProducer): each token's row is added, normed and quantized by one thread, and a layer
  // has four parallel sections fewer. add_residual: xn_ holds the last product's output.
  const std::vector<float>* norm_weight = nullptr;
  bool add_residual = false;
  const auto norm_rows = [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      float* xt = x_.data() + t * hidden;
      float* xnt = xn_.data() + t * hidden;
      if (add_residual) AddInPlace(xt, xnt, hidden);
      RmsNorm(xt, norm_weight->data(), c.rms_norm_eps, hidden, xnt);
    }
  };
  const auto swiglu_rows = [&](int64_t b, int64_t e) {
    SiluMul(gate_.data() + b * ffn, up_.data() + b * ffn, (e - b) * ffn);
  };
  const ActProducer norm(norm_rows);
  const ActProducer swiglu(swiglu_rows);

  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    const LayerWeights& w = weights_.layers[layer];
    norm_weight = &w.attn_norm;
    add_residual = layer > 0;
    const MatMulTarget qkv[] = {
        {&w.wq, q_.data(), q_dim}, {&w.wk, k_.data(), kv_dim}, {&w.wv, v_.data(), kv_dim}};
    MatMulMany(qkv, xn_.data(), hidden, num_tokens, pool_, &norm);

    pool_.ParallelFor(num_tokens, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        float* q = q_.data() + t * q_dim;
        float* k = k_.data() + t * kv_dim;
        float* v = v_.data() + t * kv_dim;
        if (c.attention_bias) {
          AddInPlace(q, w.bq.data(), q_dim);
          AddInPlace(k, w.bk.data(), kv_dim);
          AddInPlace(v, w.bv.data(), kv_dim);
        }
        const float* cos = rope_cos_.data() + t * half;
        const float* sin = rope_sin_.data() + t * half;
        ApplyRopeAngles(q, c.num_heads, c.head_dim, cos, sin, c.rope_style);
        ApplyRopeAngles(k, c.num_kv_heads, c.head_dim, cos, sin, c.rope_style);
        const int64_t pos = token_pos_[t];
        // Write this token's K/V into its slot of the paged cache.
        const BatchSequence& seq = batch.sequences[token_seq_[t]];
        cache.Store(layer, seq.block_table[pos / block_size], pos % block_size, k, v);
      }
    });

    Attention(batch, layer, cache);
    MatMul(w.wo, attn_.data(), q_dim, num_tokens, xn_.data(), hidden, pool_);

    norm_weight = &w.ffn_norm;
    add_residual = true;
    const MatMulTarget gate_up[] = {{&w.w_gate, gate_.data(), ffn}, {&w.w_up, up_.data(), ffn}};
    MatMulMany(gate_up, xn_.data(), hidden, num_tokens, pool_, &norm);
    MatMul(w.w_down, gate_.data(), ffn, num_tokens, xn_.data(), hidden, pool_, &swiglu);
  }
  if (c.num_layers > 0) AddInPlace(x_.data(), xn_.data(), num_tokens * hidden);  // last residual

  // Final norm and head only for the rows whose logits are wanted.
  const int64_t num_rows = static_cast<int64_t>(batch.logits_rows.size());
  for (int64_t r = 0; r < num_rows; ++r) {
    RmsNorm(x_.data() + batch.logits_rows[r] * hidden, weights_.final_norm.data(), c.rms_norm_eps,
            hidden, xn_.data() + r * hidden);
  }
  MatMul(weights_.lm_head, xn_.data(), hidden, num_rows, logits, c.vocab_size, pool_);
  return Status::Ok();
}

}  // namespace jisu
