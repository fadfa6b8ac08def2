// A grammar lowered for the matcher: rules of alternatives, each alternative a contiguous run of
// states ending in kEnd. A state is what the top of a parse stack can point at:
//   kMatch  consumes one byte. The bytes in `byte_set` complete the element (a literal byte, or
//           the last byte of a character of a class) and continue at `next`; `transitions` lead
//           to sub-states inside a multi-byte UTF-8 character (kMatch states outside any
//           alternative, with the same `next`). A class thus stays one element however many
//           bytes its characters take, which keeps tokens that split characters exact.
//   kRef    calls rule `rule`, returning to the following state (state id + 1).
//   kEnd    the alternative is complete: return to the caller.
// Groups and repetitions become helper rules: x* is R ::= x R | "" (right recursion, which the
// matcher runs as a tail call in constant stack), x{m,n} is m copies of x and a chain of n - m
// nested optionals.
// Lower() rejects what the stack matcher cannot run or what could never finish: left recursion
// (direct or through rules that can match the empty string), a root that derives no finite
// string, and programs above kMaxStates.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "jisu/status.h"

namespace jisu::grammar {

enum class StateKind : uint8_t { kMatch, kRef, kEnd };

struct ByteTransition {
  uint8_t lo = 0, hi = 0;
  uint32_t target = 0;  // a kMatch sub-state
};

struct ProgramState {
  StateKind kind = StateKind::kEnd;
  uint32_t next = 0;                        // kMatch: where a completed element continues
  uint32_t rule = 0;                        // kRef
  uint32_t byte_set = 0;                    // kMatch: index into Program::byte_set
  uint32_t trans_begin = 0, trans_end = 0;  // kMatch: Program::transitions range
};

class Program {
 public:
  static constexpr size_t kMaxStates = 1u << 20;

  static Result<Program> Lower(const Grammar& g);

  const ProgramState& state(uint32_t s) const { return states_[s]; }
  size_t num_states() const { return states_.size(); }
  size_t num_rules() const { return rule_alts_.size(); }
  uint32_t root() const { return root_; }
  // True when byte b completes the kMatch state s's element.
  bool Completes(uint32_t s, uint8_t b) const {
    const auto& bits = byte_sets_[states_[s].byte_set];
    return (bits[b >> 6] >> (b & 63)) & 1;
  }
  std::span<const ByteTransition> transitions(uint32_t s) const {
    return {transitions_.data() + states_[s].trans_begin,
            transitions_.data() + states_[s].trans_end};
  }
  // First states of rule r's alternatives.
  std::span<const uint32_t> alternatives(uint32_t r) const {
    return {alt_starts_.data() + rule_alts_[r].first, alt_starts_.data() + rule_alts_[r].second};
  }
  const std::string& rule_name(uint32_t r) const { return rule_names_[r]; }
  // The rule whose alternative holds state s.
  uint32_t rule_of(uint32_t s) const { return state_rule_[s]; }
  // Whether byte b can come right after rule r completes, in some context (its FOLLOW set).
  // The mask cache uses it to reject tokens that leave a rule with a byte nothing accepts.
  bool Follows(uint32_t r, uint8_t b) const { return (follow_[r][b >> 6] >> (b & 63)) & 1; }

 private:
  friend class ProgramBuilder;
  friend class ProgramAnalyzer;
  std::vector<ProgramState> states_;
  std::vector<std::array<uint64_t, 4>> byte_sets_;
  std::vector<ByteTransition> transitions_;
  std::vector<std::pair<uint32_t, uint32_t>> rule_alts_;  // [first, last) into alt_starts_
  std::vector<uint32_t> alt_starts_;
  std::vector<std::string> rule_names_;  // helpers: "<rule>/group", "<rule>/rep", ...
  std::vector<uint32_t> state_rule_;
  std::vector<std::array<uint64_t, 4>> follow_;  // per rule
  uint32_t root_ = 0;
};

}  // namespace jisu::grammar
