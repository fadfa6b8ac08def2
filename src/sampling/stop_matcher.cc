// StopMatcher: incremental stop-string search over streamed text (see sampler.h for the
// contract). One KMP automaton per stop string carries its match state across deltas, so each
// byte is looked at once per stop, however the text is split.
#include <algorithm>
#include <cassert>
#include <string>

#include "sampling/sampler.h"

namespace jisu {
namespace {

// Length (0..3) of a trailing UTF-8 sequence that is incomplete but could still become valid:
// a lead byte followed by fewer continuation bytes than it announces.
size_t IncompleteUtf8Tail(std::string_view s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t need = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 4;
    }
    return need > back ? back : 0;
  }
  return 0;  // only continuation bytes (or nothing): not a sequence we can complete
}

// failure[i] = length of the longest proper prefix of p[0..i] that is also its suffix.
std::vector<uint32_t> KmpFailure(const std::string& p) {
  std::vector<uint32_t> failure(p.size(), 0);
  uint32_t k = 0;
  for (size_t i = 1; i < p.size(); ++i) {
    while (k > 0 && p[i] != p[k]) k = failure[k - 1];
    if (p[i] == p[k]) ++k;
    failure[i] = k;
  }
  return failure;
}

}  // namespace

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (std::string& s : stops) {
    if (s.empty()) continue;
    max_stop_len_ = std::max(max_stop_len_, s.size());
    failure_.push_back(KmpFailure(s));
    stops_.push_back(std::move(s));
  }
  state_.assign(stops_.size(), 0);
}

StopMatcher::Output StopMatcher::Push(std::string_view delta) {
  Output out;
  if (stopped_) {
    out.stopped = true;
    return out;
  }
  const size_t base = pending_.size();
  pending_.append(delta);

  // Earliest start (index into pending_) among the stops completed by this delta. Every match
  // lies inside pending_: held-back text is at least as long as any automaton state.
  size_t best_start = std::string::npos;
  for (size_t j = 0; j < delta.size(); ++j) {
    const size_t end = base + j + 1;  // one past the byte being fed
    // Matches ending here or later start at >= end - max_stop_len_: none can beat best_start.
    if (best_start != std::string::npos && end >= best_start + max_stop_len_) break;
    const char b = delta[j];
    for (size_t i = 0; i < stops_.size(); ++i) {
      const std::string& s = stops_[i];
      uint32_t st = state_[i];
      if (st == s.size()) continue;  // already matched in this delta; later matches start later
      while (st > 0 && s[st] != b) st = failure_[i][st - 1];
      if (s[st] == b) ++st;
      state_[i] = st;
      if (st == s.size()) best_start = std::min(best_start, end - st);
    }
  }
  if (best_start != std::string::npos) {
    out.text.assign(pending_, 0, best_start);
    out.stopped = true;
    stopped_ = true;
    pending_.clear();
    return out;
  }

  uint32_t hold = 0;
  for (uint32_t st : state_) hold = std::max(hold, st);
  assert(hold <= pending_.size());
  size_t release = pending_.size() - hold;
  release -= IncompleteUtf8Tail(std::string_view(pending_).substr(0, release));
  out.text.assign(pending_, 0, release);
  pending_.erase(0, release);
  return out;
}

std::string StopMatcher::Flush() {
  if (stopped_) return {};
  std::string rest = std::move(pending_);
  pending_.clear();
  // The stream ended: partial matches refer to text that is gone now.
  std::fill(state_.begin(), state_.end(), 0);
  return rest;
}

}  // namespace jisu
