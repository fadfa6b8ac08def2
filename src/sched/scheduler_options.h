// Options of the scheduler (policy): per-step token budget and sequence cap, queue bound,
// chunked prefill and the context limit. Built once, validated once, then read-only.
// The prefix-cache mode is not here: it belongs to the PrefixCache handed to the Scheduler
// (one source of truth); a null cache or mode `off` means no lookups and no commits.
#pragma once

#include <cstdint>

#include "jisu/status.h"

namespace jisu {

struct SchedulerOptions {
  int64_t max_batch_tokens = 2048;  // --max-batch-tokens: tokens fed per step, all sequences
  int64_t max_seqs = 256;           // --max-seqs: running (and so scheduled) sequences
  int64_t max_queue = 1024;         // --max-queue: waiting requests before AddRequest rejects
  // Chunked prefill: a prompt longer than the remaining budget is fed over several steps, mixed
  // with the decodes of the running requests. Off: a request's pending tokens are fed in one
  // step or not at all (then max_batch_tokens must cover max_model_len).
  bool chunked_prefill = true;
  // With chunked prefill, at most this many tokens per request per step (0: no cap but the
  // budget), so that several long prompts share a step instead of one taking it all.
  int64_t max_chunk_tokens = 0;
  // --kv-prealloc, for comparison studies only: admission reserves the blocks of the request's
  // whole possible length, min(prompt + max_tokens, max_model_len), up front, as a server with
  // static per-request KV allocation would. Running requests then never grow nor get preempted.
  bool kv_prealloc = false;
  int64_t block_size = 16;       // must equal the BlockPool's
  int64_t max_model_len = 4096;  // prompt + generated tokens per request

  // Ok, or InvalidArgument naming the first bad field.
  Status Validate() const;
};

}  // namespace jisu
