#include "backend/forward_batch.h"

#include <string>

namespace jisu {

Status ValidateForwardBatch(const ForwardBatch& batch, int64_t max_position, int64_t vocab_size,
                            int64_t block_size, int64_t num_blocks) {
  if (!batch.options.weights.empty()) {
    return Status::InvalidArgument("batch: weight set '" + batch.options.weights +
                                   "' is not loaded (only the model's own weights are)");
  }
  int64_t total = 0;
  for (const BatchSequence& s : batch.sequences) {
    if (s.num_tokens <= 0 || s.start_position < 0) {
      return Status::InvalidArgument("batch: a sequence has no tokens or a negative position");
    }
    const int64_t end = s.start_position + s.num_tokens;
    if (end > max_position) {
      return Status::OutOfRange("sequence length " + std::to_string(end) +
                                " exceeds the model's context of " + std::to_string(max_position) +
                                " tokens");
    }
    const int64_t needed = (end + block_size - 1) / block_size;
    if (needed > static_cast<int64_t>(s.block_table.size())) {
      return Status::InvalidArgument("batch: block table too short for the sequence");
    }
    for (int64_t b = 0; b < needed; ++b) {
      if (s.block_table[b] < 0 || s.block_table[b] >= num_blocks) {
        return Status::InvalidArgument("batch: block id out of range");
      }
    }
    total += s.num_tokens;
  }
  if (total != batch.num_tokens()) {
    return Status::InvalidArgument("batch: sequence token counts do not add up to the batch");
  }
  for (int32_t id : batch.token_ids) {
    if (id < 0 || id >= vocab_size) {
      return Status::InvalidArgument("token id " + std::to_string(id) +
                                     " is outside the vocabulary");
    }
  }
  for (int64_t r : batch.logits_rows) {
    if (r < 0 || r >= total) return Status::InvalidArgument("batch: logits row out of range");
  }
  return Status::Ok();
}

}  // namespace jisu
