#include "grammar/stacks.h"

namespace jisu::grammar {
namespace {

constexpr uint32_t kEmpty = 0xFFFFFFFFu;
constexpr uint64_t kEmptyKey = ~uint64_t{0};

bool IsNode(uint32_t parent) { return parent < kNoNode; }

}  // namespace

void StackPool::Rehash(size_t capacity) {
  slots_.assign(capacity, kEmpty);
  mask_ = capacity - 1;
  for (uint32_t id = 0; id < nodes_.size(); ++id) {
    size_t i = Hash(nodes_[id].state, nodes_[id].parent) & mask_;
    while (slots_[i] != kEmpty) i = (i + 1) & mask_;
    slots_[i] = id;
  }
}

uint32_t StackPool::Intern(uint32_t state, uint32_t parent) {
  size_t i = Hash(state, parent) & mask_;
  while (slots_[i] != kEmpty) {
    const StackNode& n = nodes_[slots_[i]];
    if (n.state == state && n.parent == parent) return slots_[i];
    i = (i + 1) & mask_;
  }
  const uint32_t depth = IsNode(parent) ? nodes_[parent].depth + 1 : 1;
  if (depth > max_depth_) return kNoNode;
  const uint32_t id = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back({state, parent, depth});
  slots_[i] = id;
  if (nodes_.size() * 2 > slots_.size()) Rehash(slots_.size() * 2);
  return id;
}

void StackPool::Erase(uint32_t id) {
  size_t i = Hash(nodes_[id].state, nodes_[id].parent) & mask_;
  while (slots_[i] != id) i = (i + 1) & mask_;
  // Backward-shift deletion keeps every probe sequence unbroken.
  size_t j = i;
  for (;;) {
    j = (j + 1) & mask_;
    if (slots_[j] == kEmpty) break;
    const size_t home = Hash(nodes_[slots_[j]].state, nodes_[slots_[j]].parent) & mask_;
    const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    slots_[i] = slots_[j];
    i = j;
  }
  slots_[i] = kEmpty;
}

void StackPool::Truncate(size_t n) {
  while (nodes_.size() > n) {
    Erase(static_cast<uint32_t>(nodes_.size() - 1));
    nodes_.pop_back();
  }
}

void StackPool::Clear() {
  nodes_.clear();
  Rehash(64);
}

void StackPool::Compact(std::span<uint32_t* const> roots) {
  std::vector<uint32_t> remap(nodes_.size(), kEmpty);
  for (uint32_t* root : roots) {
    for (uint32_t id = *root; IsNode(id) && remap[id] == kEmpty; id = nodes_[id].parent) {
      remap[id] = 0;  // marked
    }
  }
  std::vector<StackNode> kept;
  for (uint32_t id = 0; id < nodes_.size(); ++id) {
    if (remap[id] == kEmpty) continue;
    StackNode n = nodes_[id];
    if (IsNode(n.parent)) n.parent = remap[n.parent];  // parents are older: already renumbered
    remap[id] = static_cast<uint32_t>(kept.size());
    kept.push_back(n);
  }
  for (uint32_t* root : roots) {
    if (IsNode(*root)) *root = remap[*root];
  }
  nodes_.swap(kept);
  size_t cap = 64;
  while (cap < nodes_.size() * 2) cap *= 2;
  nodes_.shrink_to_fit();
  Rehash(cap);
}

void StackStepper::BeginSet() {
  ++round_;
  if (round_ == 0) {  // wrapped: old stamps could collide
    std::fill(stamp_.begin(), stamp_.end(), 0);
    round_ = 1;
  }
  for (uint32_t i : touched_) visited_[i] = kEmptyKey;
  touched_.clear();
}

bool StackStepper::Visit(uint64_t key) {
  if (visited_.size() < 2 * (touched_.size() + 1)) {
    // Grow (rare): rebuild from the touched keys.
    std::vector<uint64_t> keys;
    for (uint32_t i : touched_) keys.push_back(visited_[i]);
    visited_.assign(visited_.empty() ? 256 : visited_.size() * 4, kEmptyKey);
    touched_.clear();
    for (uint64_t k : keys) Visit(k);
  }
  const size_t mask = visited_.size() - 1;
  size_t i = (key * 0x9E3779B97F4A7C15ull >> 20) & mask;
  while (visited_[i] != kEmptyKey) {
    if (visited_[i] == key) return false;
    i = (i + 1) & mask;
  }
  visited_[i] = key;
  touched_.push_back(static_cast<uint32_t>(i));
  return true;
}

void StackStepper::Closure(uint32_t state, uint32_t parent, std::vector<uint32_t>* out,
                           StepFlags* flags) {
  work_.clear();
  work_.push_back({state, parent});
  while (!work_.empty()) {
    auto [s, p] = work_.back();
    work_.pop_back();
    if (!Visit(uint64_t{s} << 32 | p)) continue;
    const ProgramState& st = program_.state(s);
    switch (st.kind) {
      case StateKind::kMatch: {
        const uint32_t id = pool_->Intern(s, p);
        if (id == kNoNode) break;
        if (stamp_.size() <= id) stamp_.resize(pool_->size() + 64, 0);
        if (stamp_[id] != round_) {
          stamp_[id] = round_;
          out->push_back(id);
        }
        break;
      }
      case StateKind::kEnd:
        if (p == kBottom) {
          flags->complete = true;
        } else if (p == kUnknown) {
          flags->exited = true;
        } else {
          const StackNode& n = pool_->node(p);
          work_.push_back({n.state, n.parent});
        }
        break;
      case StateKind::kRef: {
        const uint32_t next = s + 1;
        const uint32_t ret =
            program_.state(next).kind == StateKind::kEnd ? p : pool_->Intern(next, p);
        if (ret == kNoNode) break;
        const auto alts = program_.alternatives(st.rule);
        for (size_t i = alts.size(); i-- > 0;) work_.push_back({alts[i], ret});
        break;
      }
    }
  }
}

void StackStepper::Expand(uint32_t state, uint32_t parent, std::vector<uint32_t>* out,
                          StepFlags* flags) {
  Closure(state, parent, out, flags);
}

void StackStepper::Advance(std::span<const uint32_t> in, uint8_t b, std::vector<uint32_t>* out,
                           StepFlags* flags) {
  out->clear();
  BeginSet();
  for (uint32_t id : in) {
    const StackNode n = pool_->node(id);  // a copy: Intern may grow the pool
    if (program_.Completes(n.state, b)) {
      Closure(program_.state(n.state).next, n.parent, out, flags);
    }
    for (const ByteTransition& t : program_.transitions(n.state)) {
      if (b < t.lo || b > t.hi) continue;
      const uint32_t sub = pool_->Intern(t.target, n.parent);
      if (sub == kNoNode) continue;
      if (stamp_.size() <= sub) stamp_.resize(pool_->size() + 64, 0);
      if (stamp_[sub] != round_) {
        stamp_[sub] = round_;
        out->push_back(sub);
      }
    }
  }
}

}  // namespace jisu::grammar
