#include "backend/cpu/transformer.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/quant.h"

namespace jisu {

Transformer::Transformer(const ModelConfig& config, const ModelWeights& weights, ThreadPool& pool)
    : config_(config),
      weights_(weights),
      pool_(pool),
      program_(BuildModelProgram(
          config, weights.rope_freq_factors ? &*weights.rope_freq_factors : nullptr)) {
  auto set = [&](Buf b, int64_t d) { dims_[static_cast<size_t>(b)] = d; };
  set(Buf::kX, config.hidden_size);
  set(Buf::kH, config.hidden_size);
  set(Buf::kOut, config.hidden_size);
  set(Buf::kQ, config.q_dim());
  set(Buf::kAttn, config.q_dim());
  set(Buf::kK, config.kv_dim());
  set(Buf::kV, config.kv_dim());
  set(Buf::kGate, config.intermediate_size);
  set(Buf::kUp, config.intermediate_size);
  rope_cos_.resize(program_.ropes.size());
  rope_sin_.resize(program_.ropes.size());
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
    for (size_t b = 0; b < bufs_.size(); ++b) bufs_[b].resize(t * dims_[b]);
    for (size_t r = 0; r < rope_cos_.size(); ++r) {
      rope_cos_[r].resize(t * config_.head_dim / 2);
      rope_sin_[r].resize(t * config_.head_dim / 2);
    }
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

void Transformer::RunTokenOps(std::span<const PendingOp> ops, int64_t t0, int64_t t1,
                              const ForwardBatch& batch, KvCache& cache, int64_t store_kv_layer) {
  const ModelConfig& c = config_;
  const int64_t half = c.head_dim / 2;
  const int64_t block_size = cache.shape().block_size;
  for (int64_t t = t0; t < t1; ++t) {
    for (const PendingOp& p : ops) {
      const Op* op = p.op;
      const LayerWeights& w = weights_.layers[p.layer];
      switch (op->code) {
        case OpCode::kNorm:
          RmsNorm(Row(op->src, t), w.Vector(op->weight)->data(), program_.norm_eps, Dim(op->src),
                  Row(op->dst, t));
          break;
        case OpCode::kHeadNorm: {
          float* x = Row(op->dst, t);
          const float* nw = w.Vector(op->weight)->data();
          for (int64_t i = 0; i < Dim(op->dst); i += c.head_dim) {
            RmsNorm(x + i, nw, program_.norm_eps, c.head_dim, x + i);
          }
          break;
        }
        case OpCode::kAddBias:
          AddInPlace(Row(op->dst, t), w.Vector(op->weight)->data(), Dim(op->dst));
          break;
        case OpCode::kRope: {
          const LayerParams& lp = program_.layers[p.layer];
          const float* cos = rope_cos_[lp.rope].data() + t * half;
          const float* sin = rope_sin_[lp.rope].data() + t * half;
          ApplyRopeAngles(Row(Buf::kQ, t), c.num_heads, c.head_dim, cos, sin, program_.rope_style);
          ApplyRopeAngles(Row(Buf::kK, t), c.num_kv_heads, c.head_dim, cos, sin,
                          program_.rope_style);
          break;
        }
        case OpCode::kGatedAct:
          if (op->act == Activation::kGeluTanh) {
            GeluTanhMul(Row(op->dst, t), Row(op->src, t), Dim(op->dst));
          } else {
            SiluMul(Row(op->dst, t), Row(op->src, t), Dim(op->dst));
          }
          break;
        case OpCode::kAdd:
          AddInPlace(Row(op->dst, t), Row(op->src, t), Dim(op->dst));
          break;
        case OpCode::kLinear:
        case OpCode::kAttention:
          break;  // not per-token (Forward runs them)
      }
    }
    if (store_kv_layer >= 0) {
      // Write this token's K/V into its slot of the paged cache.
      const int64_t pos = token_pos_[t];
      const BatchSequence& seq = batch.sequences[token_seq_[t]];
      cache.Store(store_kv_layer, seq.block_table[pos / block_size], pos % block_size,
                  Row(Buf::kK, t), Row(Buf::kV, t));
    }
  }
}

void Transformer::Attention(const ForwardBatch& batch, int64_t layer, KvCache& cache) {
  const int64_t num_tokens = batch.num_tokens();
  const int64_t head_dim = config_.head_dim;
  const int64_t group = config_.num_heads / config_.num_kv_heads;
  const int64_t q_dim = config_.q_dim();
  const float scale = program_.attn_scale;
  const int64_t window = program_.layers[layer].window;
  const float* q_all = bufs_[static_cast<size_t>(Buf::kQ)].data();
  float* out_all = bufs_[static_cast<size_t>(Buf::kAttn)].data();
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
        const int64_t first = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
        const float* q = q_all + t * q_dim + kv_head * group * head_dim;
        PagedKvHead kv = cache.Head(layer, kv_head);
        kv.block_table = seq.block_table.data();
        AttendPaged(q, group, head_dim, scale, kv, first, pos, scores, stride,
                    out_all + t * q_dim + kv_head * group * head_dim);
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
      float* x = Row(Buf::kX, t);
      DequantizeRow(emb.dtype, row, x, hidden);
      if (program_.embed_scale != 1.0f) {
        for (int64_t i = 0; i < hidden; ++i) x[i] *= program_.embed_scale;
      }
      for (size_t r = 0; r < program_.ropes.size(); ++r) {
        RopeAngles(token_pos_[t], program_.ropes[r].inv_freq.data(), half,
                   rope_cos_[r].data() + t * half, rope_sin_[r].data() + t * half);
      }
    }
  });

  // Per-token ops are held back and run inside the next product's activation pass (each
  // token's rows produced by the thread that then quantizes them), or in one pass with the K/V
  // stores before attention, or over the pool at the end. A layer's last residual add thus
  // rides with the next layer's input norm.
  pending_.clear();
  auto flush_parallel = [&](int64_t store_kv_layer) {
    pool_.ParallelFor(num_tokens, 1, [&](int64_t b, int64_t e) {
      RunTokenOps(pending_, b, e, batch, cache, store_kv_layer);
    });
    pending_.clear();
  };
  const auto produce_rows = [&](int64_t b, int64_t e) {
    RunTokenOps(pending_, b, e, batch, cache, -1);
  };
  const ActProducer producer(produce_rows);
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    const LayerWeights& w = weights_.layers[layer];
    for (const Op& op : program_.layer_ops) {
      if (IsPerTokenOp(op.code)) {
        pending_.push_back(PendingOp{&op, layer});
      } else if (op.code == OpCode::kAttention) {
        flush_parallel(layer);  // pending ops (bias, norms, rope) and the K/V writes
        Attention(batch, layer, cache);
      } else {  // kLinear: the pending ops become the product's activation producer
        MatMulTarget targets[3];
        const size_t n = op.targets.size();
        for (size_t i = 0; i < n; ++i) {
          targets[i] = {w.Matrix(op.targets[i].weight), Row(op.targets[i].dst, 0),
                        Dim(op.targets[i].dst)};
        }
        MatMulMany(
            {targets, n}, Row(op.src, 0), Dim(op.src), num_tokens, pool_,
            pending_.empty() ? nullptr : &producer,
            MatMulOptions{.float_activations = op.float_activations, .path = batch.options.matmul});
        pending_.clear();
      }
    }
  }
  if (!pending_.empty()) flush_parallel(-1);

  // Final norm and head only for the rows whose logits are wanted.
  const int64_t num_rows = static_cast<int64_t>(batch.logits_rows.size());
  if (head_out_.size() < static_cast<size_t>(num_rows * hidden))
    head_out_.resize(num_rows * hidden);
  for (int64_t r = 0; r < num_rows; ++r) {
    RmsNorm(Row(Buf::kX, batch.logits_rows[r]), weights_.final_norm.data(), program_.norm_eps,
            hidden, head_out_.data() + r * hidden);
  }
  MatMul(weights_.lm_head, head_out_.data(), hidden, num_rows, logits, c.vocab_size, pool_, nullptr,
         MatMulOptions{.path = batch.options.matmul});
  if (program_.final_logit_softcap > 0) {
    SoftCap(logits, num_rows * c.vocab_size, program_.final_logit_softcap);
  }
  return Status::Ok();
}

}  // namespace jisu
