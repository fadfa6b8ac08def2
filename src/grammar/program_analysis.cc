#include "grammar/program_analysis.h"

#include <deque>

namespace jisu::grammar {

class ProgramAnalyzer {
 public:
  explicit ProgramAnalyzer(Program* p) : p_(*p), n_(p->rule_alts_.size()) {}

  Status Run() {
    Index();
    nullable_ = Propagate(/*productive=*/false);
    const std::vector<char> productive = Propagate(/*productive=*/true);
    if (!productive[p_.root_]) {
      return Status::InvalidArgument("the grammar cannot produce any complete string from '" +
                                     p_.rule_names_[p_.root_] + "'");
    }
    JISU_RETURN_IF_ERROR(LeftRecursion());
    ComputeFollow();
    return Status::Ok();
  }

 private:
  using Bytes = std::array<uint64_t, 4>;
  struct Alt {
    uint32_t rule, begin, end;  // states [begin, end), end is its kEnd
  };

  static bool Or(Bytes* dst, const Bytes& src) {
    bool changed = false;
    for (int i = 0; i < 4; ++i) {
      const uint64_t v = (*dst)[i] | src[i];
      changed |= v != (*dst)[i];
      (*dst)[i] = v;
    }
    return changed;
  }

  void Index() {
    for (uint32_t r = 0; r < n_; ++r) {
      for (uint32_t a : p_.alternatives(r)) {
        uint32_t e = a;
        while (p_.states_[e].kind != StateKind::kEnd) ++e;
        alts_.push_back({r, a, e});
      }
    }
  }

  bool MatchesNothing(uint32_t s) const {
    const ProgramState& st = p_.states_[s];
    const Bytes& b = p_.byte_sets_[st.byte_set];
    return st.trans_begin == st.trans_end && !(b[0] | b[1] | b[2] | b[3]);
  }

  Bytes MatchFirst(uint32_t s) const {
    Bytes b = p_.byte_sets_[p_.states_[s].byte_set];
    for (const ByteTransition& t : p_.transitions(s)) {
      for (int c = t.lo; c <= t.hi; ++c) b[c >> 6] |= uint64_t{1} << (c & 63);
    }
    return b;
  }

  // Nullable (every element of some alternative can be empty) or productive (every element of
  // some alternative derives a finite string): an alternative counts the references still
  // missing; a rule that becomes X decrements the alternatives that use it.
  std::vector<char> Propagate(bool productive) {
    std::vector<char> mark(n_, 0);
    std::vector<int64_t> missing(alts_.size(), 0);
    std::vector<std::vector<uint32_t>> users(n_);  // rule -> alternatives, per occurrence
    std::deque<uint32_t> queue;
    for (uint32_t i = 0; i < alts_.size(); ++i) {
      const Alt& a = alts_[i];
      bool blocked = false;
      for (uint32_t s = a.begin; s < a.end; ++s) {
        const ProgramState& st = p_.states_[s];
        if (st.kind == StateKind::kMatch) {
          blocked |= !productive || MatchesNothing(s);
        } else {
          ++missing[i];
          users[st.rule].push_back(i);
        }
      }
      if (blocked) missing[i] = -1;
      if (missing[i] == 0 && !mark[a.rule]) {
        mark[a.rule] = 1;
        queue.push_back(a.rule);
      }
    }
    while (!queue.empty()) {
      const uint32_t q = queue.front();
      queue.pop_front();
      for (uint32_t i : users[q]) {
        if (missing[i] <= 0 || --missing[i] != 0) continue;
        if (!mark[alts_[i].rule]) {
          mark[alts_[i].rule] = 1;
          queue.push_back(alts_[i].rule);
        }
      }
    }
    return mark;
  }

  // A cycle of "may start with" edges (a reference preceded only by nullable references).
  Status LeftRecursion() const {
    std::vector<std::vector<uint32_t>> edges(n_);
    for (const Alt& a : alts_) {
      for (uint32_t s = a.begin; s < a.end; ++s) {
        const ProgramState& st = p_.states_[s];
        if (st.kind == StateKind::kMatch) break;
        edges[a.rule].push_back(st.rule);
        if (!nullable_[st.rule]) break;
      }
    }
    std::vector<char> color(n_, 0);  // 1: on the DFS path
    std::vector<std::pair<uint32_t, size_t>> stack;
    for (uint32_t start = 0; start < n_; ++start) {
      if (color[start]) continue;
      stack.push_back({start, 0});
      color[start] = 1;
      while (!stack.empty()) {
        auto& [r, i] = stack.back();
        if (i == edges[r].size()) {
          color[r] = 2;
          stack.pop_back();
          continue;
        }
        const uint32_t t = edges[r][i++];
        if (color[t] == 1) {
          std::string path;
          bool on = false;
          for (auto& [q, unused] : stack) {
            if (q == t) on = true;
            if (on) path += p_.rule_names_[q] + " -> ";
          }
          path += p_.rule_names_[t];
          return Status::InvalidArgument(
              "rule '" + p_.rule_names_[t] + "' is left-recursive (" + path +
              "), or repeats something that can match the empty string; the matcher needs "
              "right recursion: write `a ::= a b | c` as `a ::= c b*`");
        }
        if (color[t] == 0) {
          color[t] = 1;
          stack.push_back({t, 0});
        }
      }
    }
    return Status::Ok();
  }

  // Propagates `sets` along edges (sets[to] includes sets[from]) until nothing grows.
  void Spread(const std::vector<std::vector<uint32_t>>& edges, std::vector<Bytes>* sets) const {
    std::deque<uint32_t> queue;
    std::vector<char> queued(n_, 1);
    for (uint32_t r = 0; r < n_; ++r) queue.push_back(r);
    while (!queue.empty()) {
      const uint32_t from = queue.front();
      queue.pop_front();
      queued[from] = 0;
      for (uint32_t to : edges[from]) {
        if (Or(&(*sets)[to], (*sets)[from]) && !queued[to]) {
          queued[to] = 1;
          queue.push_back(to);
        }
      }
    }
  }

  // FIRST: bytes a rule's strings can start with; FOLLOW: bytes that can come right after it
  // (nothing after the root). Each alternative is walked once, backwards, carrying the FIRST of
  // its suffix; what depends on another rule's set becomes an edge.
  void ComputeFollow() {
    std::vector<Bytes> first(n_, Bytes{});
    std::vector<std::vector<uint32_t>> first_edges(n_);
    for (const Alt& a : alts_) {
      for (uint32_t s = a.begin; s < a.end; ++s) {
        const ProgramState& st = p_.states_[s];
        if (st.kind == StateKind::kMatch) {
          Or(&first[a.rule], MatchFirst(s));
          break;
        }
        first_edges[st.rule].push_back(a.rule);
        if (!nullable_[st.rule]) break;
      }
    }
    Spread(first_edges, &first);
    p_.follow_.assign(n_, Bytes{});
    std::vector<std::vector<uint32_t>> follow_edges(n_);
    for (const Alt& a : alts_) {
      Bytes suffix{};            // FIRST of the states after s
      bool suffix_empty = true;  // they can all be empty
      for (uint32_t s = a.end; s-- > a.begin;) {
        const ProgramState& st = p_.states_[s];
        if (st.kind == StateKind::kMatch) {
          suffix = MatchFirst(s);
          suffix_empty = false;
          continue;
        }
        Or(&p_.follow_[st.rule], suffix);
        if (suffix_empty) follow_edges[a.rule].push_back(st.rule);
        if (nullable_[st.rule]) {
          Or(&suffix, first[st.rule]);
        } else {
          suffix = first[st.rule];
          suffix_empty = false;
        }
      }
    }
    Spread(follow_edges, &p_.follow_);
  }

  Program& p_;
  const size_t n_;
  std::vector<Alt> alts_;
  std::vector<char> nullable_;
};

Status AnalyzeProgram(Program* program) { return ProgramAnalyzer(program).Run(); }

}  // namespace jisu::grammar
