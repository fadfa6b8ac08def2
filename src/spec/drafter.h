// Where draft tokens come from (speculative decoding): a Drafter proposes a short continuation
// of a request, which the engine feeds with the request's next decode and verifies in the same
// forward pass (Scheduler::SetDraftTokens, StepRunner). A proposal is only a guess: a wrong one
// costs compute, never correctness, because only tokens the target model itself would have
// produced are kept. The real drafters (n-gram / prompt lookup, a draft model, EAGLE-style heads)
// come later; this is the seam they plug into (EngineOptions::drafter).
// Called on the engine loop thread only, between steps; an implementation need not be
// thread-safe but must be quick (it runs once per decoding request per step).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace jisu {

class Drafter {
 public:
  virtual ~Drafter() = default;

  // Proposes up to `max_tokens` tokens to follow `tokens` (the request's prompt and the tokens
  // generated so far) into `*drafts` (cleared first; leaving it empty proposes nothing).
  // `request_id` lets a stateful drafter keep per-request state.
  virtual void Propose(int64_t request_id, std::span<const int32_t> tokens, int64_t max_tokens,
                       std::vector<int32_t>* drafts) = 0;

  // The request ended (finished, cancelled or failed): drop its state, if any.
  virtual void Forget(int64_t request_id) { (void)request_id; }
};

}  // namespace jisu
