#include "sched/scheduler_options.h"

#include <string>

namespace jisu {
namespace {

Status Bad(const char* field, int64_t value, const char* rule) {
  return Status::InvalidArgument(std::string("scheduler option ") + field + " = " +
                                 std::to_string(value) + ": " + rule);
}

}  // namespace

Status SchedulerOptions::Validate() const {
  if (max_batch_tokens < 1) return Bad("max_batch_tokens", max_batch_tokens, "must be >= 1");
  if (max_seqs < 1) return Bad("max_seqs", max_seqs, "must be >= 1");
  if (max_queue < 0) return Bad("max_queue", max_queue, "must be >= 0");
  if (max_chunk_tokens < 0) return Bad("max_chunk_tokens", max_chunk_tokens, "must be >= 0");
  if (block_size < 1) return Bad("block_size", block_size, "must be >= 1");
  if (max_model_len < 2) return Bad("max_model_len", max_model_len, "must be >= 2");
  if (!chunked_prefill && max_batch_tokens < max_model_len) {
    return Bad("max_batch_tokens", max_batch_tokens,
               "must be >= max_model_len when chunked prefill is off (a whole prompt is fed in "
               "one step)");
  }
  return Status::Ok();
}

}  // namespace jisu
