// Parse stacks of the grammar matcher, and one byte step over a set of them.
//
// A stack is a path in a persistent tree (StackPool): a node is (program state, parent node), the
// top node's state is a kMatch state (the next byte it expects), the nodes below hold return
// states. Nodes are hash-consed, so two equal stacks are one id: a set of stacks is a set of
// ids, deduplicated for free, and a step shares the unchanged part of every stack. Node ids only
// grow (a parent is always older than its child), so Truncate(n) undoes everything interned
// after a mark (speculative walks: the mask cache, uncertain tokens) and Compact() renumbers
// the nodes still reachable (the matcher's memory bound).
//
// StackStepper::Advance consumes one byte from every stack of a set: the top's element matches
// or dies, a completed element continues at the next state, and references and returns are
// expanded (closure) until every new top expects a byte again. A reference that is the last
// element of its alternative pushes no return node (tail call), so right recursion such as
// `R ::= x R | ""` runs in constant stack. Popping below a stack reports `complete` (parent
// kBottom: the root rule finished, EOS may follow) or `exited` (parent kUnknown: the mask
// cache's stand-in for a caller it does not know).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/program.h"

namespace jisu::grammar {

inline constexpr uint32_t kBottom = 0xFFFFFFFFu;   // nothing below: popping completes the root
inline constexpr uint32_t kUnknown = 0xFFFFFFFEu;  // an unknown caller (mask precompute)
inline constexpr uint32_t kNoNode = 0xFFFFFFFDu;   // Intern refused (too deep)

struct StackNode {
  uint32_t state;
  uint32_t parent;  // a node id, kBottom or kUnknown
  uint32_t depth;   // 1 for a node on kBottom/kUnknown
};

class StackPool {
 public:
  explicit StackPool(uint32_t max_depth = 2048) : max_depth_(max_depth) { Rehash(64); }

  // The node (state, parent), created if new; kNoNode past max_depth.
  uint32_t Intern(uint32_t state, uint32_t parent);
  const StackNode& node(uint32_t id) const { return nodes_[id]; }
  size_t size() const { return nodes_.size(); }
  size_t bytes() const { return nodes_.capacity() * sizeof(StackNode) + slots_.capacity() * 4; }
  // Drops every node created after size() was n.
  void Truncate(size_t n);
  // Keeps only the nodes reachable from `roots` (rewritten to the new ids) and the empty pool's
  // reserve; ids of kept nodes keep their relative order.
  void Compact(std::span<uint32_t* const> roots);
  void Clear();

 private:
  static uint64_t Hash(uint32_t state, uint32_t parent) {
    uint64_t h = (uint64_t{state} << 32 | parent) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
  }
  void Rehash(size_t capacity);
  void Erase(uint32_t id);

  std::vector<StackNode> nodes_;
  std::vector<uint32_t> slots_;  // open addressing, linear probing; kEmpty or a node id
  size_t mask_ = 0;
  uint32_t max_depth_;
};

// Flags of one step.
struct StepFlags {
  bool complete = false;  // some stack popped past kBottom
  bool exited = false;    // some stack popped to kUnknown
};

class StackStepper {
 public:
  StackStepper(const Program& program, StackPool* pool) : program_(program), pool_(pool) {}

  // The tops reached from (state, parent) by the closure, appended to `out`.
  void Expand(uint32_t state, uint32_t parent, std::vector<uint32_t>* out, StepFlags* flags);
  // Every stack of `in` consumes byte b; the new tops go to `out` (cleared first).
  void Advance(std::span<const uint32_t> in, uint8_t b, std::vector<uint32_t>* out,
               StepFlags* flags);
  // Starts a new deduplication round for Expand calls that form one set.
  void BeginSet();

 private:
  void Closure(uint32_t state, uint32_t parent, std::vector<uint32_t>* out, StepFlags* flags);
  bool Visit(uint64_t key);

  const Program& program_;
  StackPool* pool_;
  std::vector<uint32_t> stamp_;  // node id -> round it was added to `out`
  uint32_t round_ = 0;
  std::vector<uint64_t> visited_;  // open-addressing set of (state, parent), cleared by touched_
  std::vector<uint32_t> touched_;
  std::vector<std::pair<uint32_t, uint32_t>> work_;
};

}  // namespace jisu::grammar
