// A grammar compiled for one vocabulary: its program and the adaptive token mask cache (the idea
// of xgrammar's), filled lazily and shared by every request that uses the grammar.
//
// The cache answers, for a stack whose top is kMatch state `s` and whose next frame returns to
// state `p` (kBottom when the top sits on the root frame), which tokens are decided without
// looking deeper into the stack. It is computed by walking the sorted vocabulary (a trie walk:
// TokenVocab) from the stack [unknown caller, p, s]:
//   accepted   some path consumes the whole token inside what is known (or pops to the unknown
//              caller exactly at the token's last byte): allowed whatever lies below;
//   rejected   every path dies inside what is known: never allowed;
//   uncertain  some path pops to the unknown caller with bytes left: decided per request by
//              running the token on the real stack (GrammarMatcher::FillMask).
// Two frames of context (not just the top) keep tokens inside a repetition context-free: in
// `"\"" char* "\""` a top in `char` returns into the `char*` loop, so a token of ten plain
// characters stays inside the known frames and is accepted once for all requests.
// An entry stores accepted tokens as a bitmask (vocab/32 words, OR-ed straight into a request's
// mask) when they are many, else as ids; uncertain ones as sorted-vocabulary indices, so the
// per-request check walks them in trie order too.
// Thread-safe: requests on different sampling threads read and fill it concurrently (a shared
// lock to read; an entry is computed without the lock and published once).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "grammar/program.h"
#include "grammar/token_vocab.h"

namespace jisu::grammar {

struct MaskEntry {
  std::vector<uint32_t> accepted_bits;  // [mask_words] when dense, else empty
  std::vector<int32_t> accepted_ids;    // when sparse
  std::vector<uint32_t> uncertain;      // sorted-vocabulary indices, ascending
  size_t bytes() const {
    return accepted_bits.capacity() * 4 + accepted_ids.capacity() * 4 + uncertain.capacity() * 4;
  }
};

struct MaskCacheStats {
  int64_t entries = 0;
  int64_t bytes = 0;
  double compute_seconds = 0;
};

class CompiledGrammar {
 public:
  CompiledGrammar(Program program, std::shared_ptr<const TokenVocab> vocab, uint32_t max_depth)
      : program_(std::move(program)), vocab_(std::move(vocab)), max_depth_(max_depth) {}

  const Program& program() const { return program_; }
  const TokenVocab& vocab() const { return *vocab_; }
  uint32_t max_depth() const { return max_depth_; }

  // The entry for top state `state` under a frame returning to `parent_state` (or kBottom).
  const MaskEntry& Entry(uint32_t state, uint32_t parent_state) const;
  // Entries computed so far, their memory and the time spent computing them.
  MaskCacheStats stats() const;

 private:
  MaskEntry Compute(uint32_t state, uint32_t parent_state) const;

  Program program_;
  std::shared_ptr<const TokenVocab> vocab_;
  uint32_t max_depth_;
  mutable std::shared_mutex mu_;
  mutable std::unordered_map<uint64_t, std::unique_ptr<const MaskEntry>> entries_;
  mutable std::atomic<int64_t> bytes_{0};
  mutable std::atomic<int64_t> compute_ns_{0};
};

}  // namespace jisu::grammar
