// One request's position in its grammar: which tokens may come next (a bitmask over the
// vocabulary), accepting the chosen token, whether the output may end here, and rollback.
//
// Why stacks (a pushdown recognizer over a set of persistent stacks, as llama.cpp's grammar
// sampler and xgrammar do) and not Earley (llguidance): the mask cost is dominated by the
// context-independent part, and with stacks "the top two frames" is a small, exact cache key
// (compiled_grammar.h), so most tokens are decided by one OR of a cached bitmask; an Earley
// item set has no such compact key. Stacks cannot run left recursion (Program::Lower rejects
// it with a rewrite hint) and can grow with ambiguity; hash-consed nodes deduplicate equal
// stacks, and both the stack depth and the node count are bounded per matcher (below).
//
// Rollback: every accepted token pushes the previous state (its set of top node ids; nodes are
// immutable, so a state is just ids) on a bounded history, and Rollback(k) pops k of them —
// what speculative decoding needs when only some drafted tokens are kept. Nodes are
// garbage-collected (StackPool::Compact) from the live state and the history when the pool
// doubles, so memory stays proportional to what may still be rolled back to.
// Not thread-safe: one matcher per request (the compiled grammar it reads is shared).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/stacks.h"
#include "jisu/status.h"

namespace jisu::grammar {

struct MatcherOptions {
  int max_rollback = 64;        // tokens Rollback can undo (the speculative window)
  size_t max_nodes = 1u << 21;  // stack nodes alive after collection (~64 MiB with the index)
  size_t max_tops = 4096;       // stacks in one state (ambiguous grammars)
};

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                          MatcherOptions options = {});

  // Accepts token `id` (its bytes; EOS only when complete). False, with nothing changed, when
  // the grammar does not allow it. After an error() every call fails.
  bool AcceptToken(int32_t id);
  // Accepts raw bytes as one step (tests, and checking text against a grammar).
  bool AcceptBytes(std::string_view bytes);
  // Whether the output may end here (EOS allowed).
  bool IsComplete() const { return error_.ok() && cur_.complete && !cur_.ended; }
  // Whether any more text may follow (some stack expects a byte).
  bool CanContinue() const { return error_.ok() && !cur_.ended && !cur_.tops.empty(); }
  // EOS was accepted, or the grammar is complete and nothing may follow: generation is over.
  bool IsTerminated() const { return cur_.ended || (cur_.complete && cur_.tops.empty()); }

  // Fills mask[vocab().mask_words()] with the tokens allowed next (bit id % 32 of word id / 32);
  // EOS ids when complete. All zero after termination or an error.
  void FillMask(uint32_t* mask);

  // Undoes the last k accepted tokens (k <= num_rollback()); false otherwise, nothing changed.
  bool Rollback(int k);
  int num_rollback() const { return static_cast<int>(history_.size()); }
  int64_t num_tokens() const { return num_tokens_; }

  // What the last FillMask did: stacks, and uncertain tokens run on the real stack.
  struct MaskWork {
    int64_t tops = 0;
    int64_t uncertain = 0;
  };
  const MaskWork& last_mask_work() const { return work_; }

  // Set when a bound was hit (stack nodes, stacks per state); the request must end.
  const Status& error() const { return error_; }
  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  struct State {
    std::vector<uint32_t> tops;
    bool complete = false;
    bool ended = false;  // EOS accepted
  };

  // Runs `bytes` from `from` into scratch_; false if every stack died.
  bool Run(const std::vector<uint32_t>& from, std::string_view bytes, State* out);
  void Commit(State next);
  void MaybeCollect();
  // Sets the bits of the entry's uncertain tokens that the stack `top` accepts.
  void CheckUncertain(uint32_t top, const MaskEntry& entry, uint32_t* mask);
  // Whether `bytes` can be consumed from the single stack `top` (pool restored after).
  bool StackAccepts(const std::vector<uint32_t>& from, std::string_view bytes);

  std::shared_ptr<const CompiledGrammar> grammar_;
  MatcherOptions options_;
  StackPool pool_;
  StackStepper step_;
  State cur_;
  std::deque<State> history_;
  int64_t num_tokens_ = 0;
  size_t collect_at_ = 1 << 14;
  Status error_;
  MaskWork work_;
  // Scratch.
  std::vector<uint32_t> a_, b_, one_;
  std::vector<std::vector<uint32_t>> levels_;  // CheckUncertain's walk, per byte depth
  std::vector<size_t> level_marks_;
  std::vector<char> level_complete_;
  std::vector<uint64_t> seen_keys_;
};

}  // namespace jisu::grammar
