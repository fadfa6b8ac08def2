#include "grammar/compiled_grammar.h"

#include <chrono>
#include <mutex>

#include "grammar/stacks.h"

namespace jisu::grammar {
namespace {

// Per byte depth of the walk: the stacks after the prefix, and how the prefix left the known
// frames. exit_here: a path popped to the unknown caller after this many bytes (or, under
// kBottom, completed the root); pending: a path left earlier with a next byte that can follow
// the exited rule, so the caller decides.
struct Level {
  std::vector<uint32_t> tops;
  bool exit_here = false;
  bool pending = false;
  size_t pool_mark = 0;
};

}  // namespace

const MaskEntry& CompiledGrammar::Entry(uint32_t state, uint32_t parent_state) const {
  const uint64_t key = uint64_t{state} << 32 | parent_state;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) return *it->second;
  }
  const auto start = std::chrono::steady_clock::now();
  auto entry = std::make_unique<const MaskEntry>(Compute(state, parent_state));
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto [it, inserted] = entries_.emplace(key, std::move(entry));
  if (inserted) {  // else another thread published the same entry first
    bytes_ += static_cast<int64_t>(it->second->bytes());
    compute_ns_ += ns;
  }
  return *it->second;
}

MaskCacheStats CompiledGrammar::stats() const {
  MaskCacheStats s;
  std::shared_lock<std::shared_mutex> lock(mu_);
  s.entries = static_cast<int64_t>(entries_.size());
  s.bytes = bytes_.load();
  s.compute_seconds = static_cast<double>(compute_ns_.load()) * 1e-9;
  return s;
}

MaskEntry CompiledGrammar::Compute(uint32_t state, uint32_t parent_state) const {
  const TokenVocab& v = *vocab_;
  StackPool pool(max_depth_);
  StackStepper step(program_, &pool);
  const bool bottom = parent_state == kBottom;
  const uint32_t parent = bottom ? kBottom : pool.Intern(parent_state, kUnknown);
  // A path that pops the parent frame leaves its rule; only a byte of that rule's FOLLOW set can
  // come next, whatever the caller (xgrammar's lookahead, in its simplest form).
  const uint32_t exited_rule = bottom ? 0 : program_.rule_of(parent_state);
  auto follows = [&](char b) {
    return !bottom && program_.Follows(exited_rule, static_cast<uint8_t>(b));
  };
  std::vector<Level> levels(v.max_token_bytes() + 1);
  levels[0].tops.push_back(pool.Intern(state, parent));
  levels[0].pool_mark = pool.size();
  size_t valid = 0;  // levels[0..valid] describe the current token's prefix

  std::vector<int32_t> accepted;
  std::vector<uint32_t> uncertain;
  const size_t n = v.num_sorted();
  size_t i = 0;
  while (i < n) {
    const std::string_view tok = v.sorted_bytes(i);
    size_t d = std::min<size_t>(v.lcp(i), valid);
    pool.Truncate(levels[d].pool_mark);
    valid = d;
    while (d < tok.size() && !levels[d].tops.empty()) {
      Level& next = levels[d + 1];
      StepFlags f;
      step.Advance(levels[d].tops, static_cast<uint8_t>(tok[d]), &next.tops, &f);
      // Under kBottom, completing the root is exact context (nothing may follow): a token
      // ending here is accepted and longer ones are not.
      next.exit_here = f.exited || (bottom && f.complete);
      next.pending = levels[d].pending || (levels[d].exit_here && follows(tok[d]));
      next.pool_mark = pool.size();
      ++d;
      valid = d;
    }
    if (d == tok.size() && !levels[d].tops.empty()) {
      accepted.push_back(v.sorted_id(i));
      ++i;
      continue;
    }
    // Dead at depth d (d >= 1): every token sharing tok[0, d) ends the same way, except for
    // the byte after the prefix when a path left the known frames exactly there.
    const Level& dead = levels[d];
    size_t end = i + 1;
    while (end < n && v.lcp(end) >= d) ++end;
    size_t k = i;
    if (tok.size() == d) {  // the prefix itself is a token: it sorts first
      if (dead.exit_here) {
        accepted.push_back(v.sorted_id(i));
      } else if (dead.pending) {
        uncertain.push_back(static_cast<uint32_t>(i));
      }
      ++k;
    }
    if (dead.pending || (dead.exit_here && !bottom)) {
      for (; k < end; ++k) {
        if (dead.pending || follows(v.sorted_bytes(k)[d]))
          uncertain.push_back(static_cast<uint32_t>(k));
      }
    }
    i = end;
  }
  MaskEntry e;
  if (accepted.size() * 32 > static_cast<size_t>(v.size())) {
    e.accepted_bits.assign(v.mask_words(), 0);
    for (int32_t id : accepted) e.accepted_bits[id >> 5] |= 1u << (id & 31);
  } else {
    e.accepted_ids = std::move(accepted);
    e.accepted_ids.shrink_to_fit();
  }
  e.uncertain = std::move(uncertain);
  e.uncertain.shrink_to_fit();
  return e;
}

}  // namespace jisu::grammar
