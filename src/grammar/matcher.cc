#include "grammar/matcher.h"

#include <algorithm>
#include <cstring>

namespace jisu::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                               MatcherOptions options)
    : grammar_(std::move(grammar)),
      options_(options),
      pool_(grammar_->max_depth()),
      step_(grammar_->program(), &pool_) {
  const Program& p = grammar_->program();
  StepFlags f;
  step_.BeginSet();
  for (uint32_t alt : p.alternatives(p.root())) step_.Expand(alt, kBottom, &cur_.tops, &f);
  cur_.complete = f.complete;
  levels_.resize(grammar_->vocab().max_token_bytes() + 1);
  level_marks_.resize(levels_.size());
  level_complete_.resize(levels_.size());
}

bool GrammarMatcher::Run(const std::vector<uint32_t>& from, std::string_view bytes, State* out) {
  a_ = from;
  StepFlags f;
  for (size_t k = 0; k < bytes.size(); ++k) {
    f = StepFlags{};
    step_.Advance(a_, static_cast<uint8_t>(bytes[k]), &b_, &f);
    a_.swap(b_);
    if (a_.size() > options_.max_tops) {
      error_ =
          Status::ResourceExhausted("the grammar is too ambiguous: more than " +
                                    std::to_string(options_.max_tops) + " parse stacks at once");
      return false;
    }
    if (a_.empty() && !(k + 1 == bytes.size() && f.complete)) return false;
  }
  out->tops = a_;
  out->complete = f.complete;
  return true;
}

bool GrammarMatcher::AcceptBytes(std::string_view bytes) {
  if (!error_.ok() || cur_.ended) return false;
  if (bytes.empty()) return true;
  const size_t mark = pool_.size();
  State next;
  if (!Run(cur_.tops, bytes, &next)) {
    pool_.Truncate(mark);
    return false;
  }
  Commit(std::move(next));
  return true;
}

bool GrammarMatcher::AcceptToken(int32_t id) {
  if (!error_.ok() || cur_.ended) return false;
  const TokenVocab& v = grammar_->vocab();
  if (v.is_eos(id)) {
    if (!cur_.complete) return false;
    State next;
    next.complete = true;
    next.ended = true;
    Commit(std::move(next));
    return true;
  }
  std::string_view bytes = v.bytes(id);
  if (num_tokens_ == 0) {
    for (const auto& [oid, ob] : v.first_overrides()) {
      if (oid == id) bytes = ob;
    }
  }
  if (bytes.empty()) return false;
  return AcceptBytes(bytes);
}

void GrammarMatcher::Commit(State next) {
  history_.push_back(std::move(cur_));
  if (static_cast<int>(history_.size()) > options_.max_rollback) history_.pop_front();
  cur_ = std::move(next);
  ++num_tokens_;
  MaybeCollect();
}

void GrammarMatcher::MaybeCollect() {
  if (pool_.size() <= collect_at_) return;
  std::vector<uint32_t*> roots;
  for (uint32_t& t : cur_.tops) roots.push_back(&t);
  for (State& s : history_) {
    for (uint32_t& t : s.tops) roots.push_back(&t);
  }
  pool_.Compact(roots);
  collect_at_ = std::max<size_t>(size_t{1} << 14, 2 * pool_.size());
  if (pool_.size() > options_.max_nodes) {
    error_ = Status::ResourceExhausted("the grammar's parse stacks exceed " +
                                       std::to_string(options_.max_nodes) + " nodes");
  }
}

bool GrammarMatcher::Rollback(int k) {
  if (k < 0 || k > static_cast<int>(history_.size())) return false;
  for (int i = 0; i < k; ++i) {
    cur_ = std::move(history_.back());
    history_.pop_back();
    --num_tokens_;
  }
  return true;
}

bool GrammarMatcher::StackAccepts(const std::vector<uint32_t>& from, std::string_view bytes) {
  const size_t mark = pool_.size();
  State out;
  const bool ok = Run(from, bytes, &out);
  pool_.Truncate(mark);
  return ok;
}

void GrammarMatcher::CheckUncertain(uint32_t top, const MaskEntry& entry, uint32_t* mask) {
  if (entry.uncertain.empty()) return;
  const TokenVocab& v = grammar_->vocab();
  const size_t mark = pool_.size();
  // levels_[d]: the stacks after the first d bytes of `prev`; marks/complete alongside.
  std::vector<size_t>& marks = level_marks_;
  std::vector<char>& complete = level_complete_;
  marks[0] = mark;
  complete[0] = 0;
  levels_[0].assign(1, top);
  size_t valid = 0;
  std::string_view prev;
  for (uint32_t idx : entry.uncertain) {
    const int32_t id = v.sorted_id(idx);
    if ((mask[id >> 5] >> (id & 31)) & 1) continue;  // another stack accepted it already
    ++work_.uncertain;
    const std::string_view tok = v.sorted_bytes(idx);
    size_t d = 0;
    while (d < prev.size() && d < tok.size() && d < valid && prev[d] == tok[d]) ++d;
    pool_.Truncate(marks[d]);
    valid = d;
    while (d < tok.size() && !levels_[d].empty()) {
      StepFlags f;
      step_.Advance(levels_[d], static_cast<uint8_t>(tok[d]), &levels_[d + 1], &f);
      ++d;
      complete[d] = f.complete;
      marks[d] = pool_.size();
      valid = d;
    }
    if (d == tok.size() && (!levels_[d].empty() || complete[d])) mask[id >> 5] |= 1u << (id & 31);
    prev = tok;
  }
  pool_.Truncate(mark);
}

void GrammarMatcher::FillMask(uint32_t* mask) {
  const TokenVocab& v = grammar_->vocab();
  std::memset(mask, 0, v.mask_words() * sizeof(uint32_t));
  work_ = MaskWork{};
  if (!error_.ok() || cur_.ended) return;
  work_.tops = static_cast<int64_t>(cur_.tops.size());
  seen_keys_.clear();
  for (uint32_t top : cur_.tops) {
    const StackNode n = pool_.node(top);
    const uint32_t parent_state = n.parent == kBottom ? kBottom : pool_.node(n.parent).state;
    const MaskEntry& e = grammar_->Entry(n.state, parent_state);
    const uint64_t key = uint64_t{n.state} << 32 | parent_state;
    if (std::find(seen_keys_.begin(), seen_keys_.end(), key) == seen_keys_.end()) {
      seen_keys_.push_back(key);
      if (!e.accepted_bits.empty()) {
        const size_t words = v.mask_words();
        for (size_t w = 0; w < words; ++w) mask[w] |= e.accepted_bits[w];
      } else {
        for (int32_t id : e.accepted_ids) mask[id >> 5] |= 1u << (id & 31);
      }
    }
  }
  for (uint32_t top : cur_.tops) {
    const StackNode n = pool_.node(top);
    const uint32_t parent_state = n.parent == kBottom ? kBottom : pool_.node(n.parent).state;
    CheckUncertain(top, grammar_->Entry(n.state, parent_state), mask);
  }
  if (num_tokens_ == 0) {
    for (const auto& [id, bytes] : v.first_overrides()) {
      if (id < 0 || id >= v.size()) continue;
      mask[id >> 5] &= ~(1u << (id & 31));
      // A token that adds nothing as the first one (SentencePiece's lone "▁") is refused: it
      // would leave the output where it was.
      if (!bytes.empty() && StackAccepts(cur_.tops, bytes)) mask[id >> 5] |= 1u << (id & 31);
    }
  }
  if (cur_.complete) {
    for (int32_t id : v.eos_ids()) {
      if (id >= 0 && id < v.size()) mask[id >> 5] |= 1u << (id & 31);
    }
  }
}

}  // namespace jisu::grammar
