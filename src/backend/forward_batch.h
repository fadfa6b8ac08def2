// The step contract between the runner and the model: a flat batch of new tokens from several
// sequences, each with its own position range and KV block table, and the rows whose logits
// are wanted. Plain data, built by the caller, read by the forward pass.
// Options: what the whole step shares (weight set, matmul path: the scheduler's step key) is
// ForwardBatch::options; what may differ per sequence (the attention variant) is in its
// BatchSequence. A backend computes with exactly these, never with process-wide switches.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "jisu/request_options.h"
#include "jisu/status.h"

namespace jisu {

struct BatchSequence {
  int64_t num_tokens = 0;      // this sequence's new tokens (contiguous in the flat batch)
  int64_t start_position = 0;  // position of its first new token; KV of [0, start) is cached
  std::span<const int32_t> block_table;  // covers positions [0, start_position + num_tokens)
  // Dense (or auto) only today; sparse prefill (issue 35) is chosen here, per sequence.
  AttentionVariant attention = AttentionVariant::kAuto;
};

struct ForwardBatch {
  std::span<const int32_t> token_ids;    // [num_tokens], sequences back to back
  std::vector<BatchSequence> sequences;  // in flat-batch order
  std::span<const int64_t> logits_rows;  // flat token indices whose logits are returned
  StepOptions options = {};              // weight set and matmul path of every row
  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
};

// Checks a batch against the model and the KV pool it will run on, before any backend touches
// memory: positive token counts that add up, positions within the context, block tables long
// enough and in range, token ids in the vocabulary, logits rows in the batch, and a weight set
// the backend holds (every backend holds only "", the loaded weights, today).
Status ValidateForwardBatch(const ForwardBatch& batch, int64_t max_position, int64_t vocab_size,
                            int64_t block_size, int64_t num_blocks);

}  // namespace jisu
