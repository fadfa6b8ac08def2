#include "grammar/compiled_grammar.h"

#include <chrono>
#include <mutex>

#include "grammar/stacks.h"

namespace jisu::grammar {
namespace {

// Per byte depth of the walk: the stacks after the prefix, and how the prefix left the known
// frames. exit_here: a path popped to the unknown caller on this byte (or completed the root,
// under kBottom); exited_any: on this byte or an earlier one.
struct Level {
  std::vector<uint32_t> tops;
  bool exit_here = false;
  bool exited_any = false;
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
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - start)
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
  const uint32_t parent = parent_state == kBottom ? kBottom : pool.Intern(parent_state, kUnknown);
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
      // Under kBottom, completing the root is exact context (nothing may follow); report it as
      // an exit at this byte so a token ending here is accepted and longer ones are not.
      next.exit_here = f.exited || (parent_state == kBottom && f.complete);
      next.exited_any = levels[d].exited_any || f.exited;
      next.pool_mark = pool.size();
      ++d;
      valid = d;
    }
    if (d == tok.size() && !levels[d].tops.empty()) {
      accepted.push_back(v.sorted_id(i));
      ++i;
      continue;
    }
    // Dead at depth d (d >= 1): every token sharing tok[0, d) ends the same way.
    const Level& dead = levels[d];
    const bool ends_here = tok.size() == d;
    size_t end = i + 1;
    while (end < n && v.lcp(end) >= d) ++end;
    if (ends_here) {
      if (dead.exit_here) {
        accepted.push_back(v.sorted_id(i));
      } else if (levels[d - 1].exited_any) {
        uncertain.push_back(static_cast<uint32_t>(i));
      }
    }
    if (dead.exited_any) {  // longer tokens continue in the unknown caller
      for (size_t k = ends_here ? i + 1 : i; k < end; ++k) {
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
