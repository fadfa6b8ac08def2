// Test double for the model runner: executes a StepPlan against a fake KV cache that stores the
// token id at each slot, and "samples" a token that is a hash of the whole sequence read back
// through the block table. So a wrong block table, a stale or overwritten block, or a bad
// prefix-cache hit changes the output, while a correct schedule (however chunked, preempted or
// cached) gives exactly ReferenceGenerate's tokens. A sequence fed drafts is verified as the
// engine does for greedy requests: row i's token is kept, and the next row is read only if it
// equals draft i (and did not stop the request).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kv/block_pool.h"
#include "sched/step_plan.h"

namespace jisu::testing {

inline constexpr int32_t kFakeVocab = 1000;

inline int32_t FakeNextToken(std::span<const int32_t> sequence) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sequence.size(); ++i) {
    h ^= static_cast<uint64_t>(sequence[i]) + (static_cast<uint64_t>(i) << 32);
    h *= 1099511628211ull;
  }
  h ^= h >> 29;
  return static_cast<int32_t>(h % kFakeVocab);
}

// The caller's stop rule (EOS) used when stops are enabled: depends only on the token.
inline bool FakeIsStop(int32_t token) { return token % 61 == 0; }

// Greedy generation without any scheduler: the expected output.
inline std::vector<int32_t> ReferenceGenerate(std::vector<int32_t> prompt, int64_t max_tokens,
                                              int64_t max_model_len, bool stops) {
  std::vector<int32_t> out;
  while (true) {
    const int32_t t = FakeNextToken(prompt);
    prompt.push_back(t);
    out.push_back(t);
    if ((stops && FakeIsStop(t)) || static_cast<int64_t>(out.size()) >= max_tokens ||
        static_cast<int64_t>(prompt.size()) >= max_model_len) {
      return out;
    }
  }
}

class FakeModelRunner {
 public:
  FakeModelRunner(const BlockPool* pool, bool stops)
      : pool_(pool),
        block_size_(pool->block_size()),
        kv_(static_cast<size_t>(pool->num_blocks()) * pool->block_size(), -1),
        stops_(stops) {}

  int64_t num_rows_sampled() const { return num_rows_sampled_; }

  // Executes `plan`; on a contract violation returns an empty output and sets `*error`.
  StepOutput Run(const StepPlan& plan, std::string* error) {
    StepOutput out;
    std::vector<int32_t> seq;
    for (const ScheduledSequence& s : plan.sequences) {
      const int64_t end = s.start_position + s.num_tokens;
      if (static_cast<int64_t>(s.block_table.size()) * block_size_ < end) {
        *error = "block table too short for request " + std::to_string(s.request_id);
        return {};
      }
      for (int64_t i = 0; i < s.num_tokens; ++i) {
        const int64_t p = s.start_position + i;
        const int32_t b = s.block_table[static_cast<size_t>(p / block_size_)];
        if (pool_->is_cached(b) || pool_->ref_count(b) != 1) {
          *error = "write into a shared or cached block " + std::to_string(b);
          return {};
        }
        kv_[Slot(b, p)] = plan.token_ids[static_cast<size_t>(s.token_offset + i)];
      }
      if (!s.needs_logits()) continue;
      if (s.num_logits_rows != 1 + s.num_draft_tokens) {
        *error = "wrong number of logits rows for request " + std::to_string(s.request_id);
        return {};
      }
      for (int64_t i = 0; i < s.num_logits_rows; ++i) {
        const int64_t row = plan.logits_rows[static_cast<size_t>(s.first_logits_row + i)];
        if (row != s.token_offset + s.num_tokens - s.num_logits_rows + i) {
          *error = "logits row out of place for request " + std::to_string(s.request_id);
          return {};
        }
      }
      // Row i sees positions [0, end - num_draft_tokens + i).
      seq.clear();
      for (int64_t p = 0; p < end; ++p) {
        seq.push_back(kv_[Slot(s.block_table[static_cast<size_t>(p / block_size_)], p)]);
      }
      for (int64_t i = 0; i <= s.num_draft_tokens; ++i) {
        const size_t len = static_cast<size_t>(end - s.num_draft_tokens + i);
        const int32_t t = FakeNextToken(std::span<const int32_t>(seq).first(len));
        const bool stop = stops_ && FakeIsStop(t);
        out.sampled.push_back({s.request_id, t, stop});
        ++num_rows_sampled_;
        if (stop || i == s.num_draft_tokens || t != seq[len]) break;
      }
    }
    return out;
  }

 private:
  size_t Slot(int32_t block, int64_t position) const {
    return static_cast<size_t>(block) * block_size_ + static_cast<size_t>(position % block_size_);
  }

  const BlockPool* pool_;
  int64_t block_size_;
  int64_t num_rows_sampled_ = 0;
  std::vector<int32_t> kv_;  // [num_blocks][block_size] token id written at each slot
  bool stops_;
};

}  // namespace jisu::testing
