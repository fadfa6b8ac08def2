#include "grammar/program.h"

#include <map>
#include <memory>

#include "grammar/program_analysis.h"
#include "grammar/utf8_sequences.h"

namespace jisu::grammar {

// Builds a Program from the IR. Rules are lowered one at a time from a worklist (helper rules
// for groups and repetitions join it); an alternative is first collected as atoms, then placed
// as consecutive states, then its classes get their UTF-8 sub-states.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(const Grammar& g) : g_(g) {}

  Result<Program> Build() {
    const size_t n = g_.rules().size();
    if (n == 0) return Status::InvalidArgument("the grammar has no rules");
    pending_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      p_.rule_names_.push_back(g_.rule(static_cast<uint32_t>(i)).name);
      pending_[i] = &g_.rule(static_cast<uint32_t>(i)).body;
    }
    p_.rule_alts_.resize(n);
    p_.root_ = g_.root();
    for (size_t r = 0; r < pending_.size(); ++r) {
      // pending_ grows while lowering (helpers): index, never hold a reference.
      const Expr* body = pending_[r];
      JISU_RETURN_IF_ERROR(LowerRule(static_cast<uint32_t>(r), *body));
    }
    JISU_RETURN_IF_ERROR(AnalyzeProgram(&p_));
    return std::move(p_);
  }

 private:
  struct Atom {
    StateKind kind = StateKind::kMatch;
    uint32_t rule = 0;              // kRef
    std::vector<CharRange> ranges;  // kMatch: normalized code point ranges
    int literal_byte = -1;          // kMatch: a single byte instead of ranges
  };
  using Alternative = std::vector<Atom>;

  Status LowerRule(uint32_t r, const Expr& body) {
    std::vector<Alternative> alts;
    if (body.kind == Expr::Kind::kAlt) {
      for (const Expr& a : body.children) {
        alts.emplace_back();
        JISU_RETURN_IF_ERROR(Emit(a, r, &alts.back()));
      }
    } else {
      alts.emplace_back();
      JISU_RETURN_IF_ERROR(Emit(body, r, &alts.back()));
    }
    const uint32_t first = static_cast<uint32_t>(p_.alt_starts_.size());
    for (const Alternative& alt : alts) {
      p_.alt_starts_.push_back(static_cast<uint32_t>(p_.states_.size()));
      JISU_RETURN_IF_ERROR(Place(alt));
      p_.state_rule_.resize(p_.states_.size(), r);
    }
    p_.rule_alts_[r] = {first, static_cast<uint32_t>(p_.alt_starts_.size())};
    return Status::Ok();
  }

  // A new helper rule (lowered later from the worklist) whose body is `body`.
  Result<uint32_t> Helper(uint32_t parent, const char* what, Expr body) {
    if (pending_.size() >= 4 * Grammar::kMaxRules + Program::kMaxStates / 4) {
      return Status::ResourceExhausted(
          "the grammar is too large once its repetitions are expanded");
    }
    owned_.push_back(std::make_unique<Expr>(std::move(body)));
    const uint32_t id = static_cast<uint32_t>(pending_.size());
    pending_.push_back(owned_.back().get());
    p_.rule_names_.push_back(p_.rule_names_[parent] + "/" + what);
    p_.rule_alts_.emplace_back();
    return id;
  }

  // The rule id of a grammar expression when it is repeated or used as a group: a reference as
  // is, anything else as a helper rule.
  Result<uint32_t> AsRule(const Expr& e, uint32_t parent, const char* what) {
    if (e.kind == Expr::Kind::kRef) return e.rule;
    return Helper(parent, what, e);
  }

  Status Emit(const Expr& e, uint32_t r, Alternative* out) {
    if (out->size() > Program::kMaxStates) return TooLarge();
    switch (e.kind) {
      case Expr::Kind::kEmpty:
        return Status::Ok();
      case Expr::Kind::kLiteral:
        for (unsigned char c : e.literal) {
          Atom a;
          a.literal_byte = c;
          out->push_back(std::move(a));
        }
        return Status::Ok();
      case Expr::Kind::kClass: {
        Atom a;
        a.ranges = NormalizeClass(e.ranges, e.negated);
        out->push_back(std::move(a));
        return Status::Ok();
      }
      case Expr::Kind::kRef: {
        if (e.rule >= pending_.size()) return Status::Internal("grammar: bad rule reference");
        Atom a;
        a.kind = StateKind::kRef;
        a.rule = e.rule;
        out->push_back(std::move(a));
        return Status::Ok();
      }
      case Expr::Kind::kSeq:
        for (const Expr& c : e.children) JISU_RETURN_IF_ERROR(Emit(c, r, out));
        return Status::Ok();
      case Expr::Kind::kAlt: {
        JISU_ASSIGN_OR_RETURN(uint32_t h, Helper(r, "group", e));
        Atom a;
        a.kind = StateKind::kRef;
        a.rule = h;
        out->push_back(std::move(a));
        return Status::Ok();
      }
      case Expr::Kind::kRepeat:
        return EmitRepeat(e, r, out);
    }
    return Status::Ok();
  }

  Status EmitRepeat(const Expr& e, uint32_t r, Alternative* out) {
    const Expr& item = e.children[0];
    if (e.min > Grammar::kMaxRepeat || (e.max != kUnbounded && e.max > Grammar::kMaxRepeat)) {
      return Status::InvalidArgument("a repetition bound above " +
                                     std::to_string(Grammar::kMaxRepeat) + " in rule '" +
                                     p_.rule_names_[r] + "'");
    }
    // Repeated copies refer to one rule unless the item is one element already.
    const bool simple = item.kind == Expr::Kind::kClass || item.kind == Expr::Kind::kRef ||
                        (item.kind == Expr::Kind::kLiteral && item.literal.size() == 1);
    Expr unit = item;
    if (!simple && e.min + (e.max == kUnbounded ? 1 : e.max - e.min) > 1) {
      JISU_ASSIGN_OR_RETURN(uint32_t h, AsRule(item, r, "item"));
      unit = Expr::Ref(h);
    }
    for (uint32_t i = 0; i < e.min; ++i) JISU_RETURN_IF_ERROR(Emit(unit, r, out));
    if (e.max == kUnbounded) {
      // R ::= unit R | ""
      JISU_ASSIGN_OR_RETURN(uint32_t rep, Helper(r, "rep", Expr::Empty()));
      *owned_.back() = Expr::Alt({Expr::Seq({unit, Expr::Ref(rep)}), Expr::Empty()});
      return Emit(Expr::Ref(rep), r, out);
    }
    // O_1 ::= unit | "";  O_k ::= unit O_{k-1} | ""
    uint32_t prev = 0;
    for (uint32_t k = 1; k <= e.max - e.min; ++k) {
      JISU_ASSIGN_OR_RETURN(uint32_t o, Helper(r, "opt", Expr::Empty()));
      Expr first = k == 1 ? unit : Expr::Seq({unit, Expr::Ref(prev)});
      *owned_.back() = Expr::Alt({std::move(first), Expr::Empty()});
      prev = o;
    }
    if (e.max > e.min) return Emit(Expr::Ref(prev), r, out);
    return Status::Ok();
  }

  Status TooLarge() {
    return Status::ResourceExhausted("the grammar is too large: more than " +
                                     std::to_string(Program::kMaxStates) + " states");
  }

  uint32_t ByteSet(const std::array<uint64_t, 4>& bits) {
    auto it = byte_set_index_.find(bits);
    if (it != byte_set_index_.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(p_.byte_sets_.size());
    p_.byte_sets_.push_back(bits);
    byte_set_index_.emplace(bits, id);
    return id;
  }

  Status Place(const Alternative& alt) {
    const uint32_t base = static_cast<uint32_t>(p_.states_.size());
    if (base + alt.size() + 1 > Program::kMaxStates) return TooLarge();
    p_.states_.resize(base + alt.size() + 1);
    for (size_t i = 0; i < alt.size(); ++i) {
      ProgramState& s = p_.states_[base + i];
      s.kind = alt[i].kind;
      s.rule = alt[i].rule;
      s.next = base + static_cast<uint32_t>(i) + 1;
    }
    p_.states_[base + alt.size()].kind = StateKind::kEnd;
    for (size_t i = 0; i < alt.size(); ++i) {
      if (alt[i].kind != StateKind::kMatch) continue;
      JISU_RETURN_IF_ERROR(PlaceMatch(alt[i], base + static_cast<uint32_t>(i)));
    }
    return Status::Ok();
  }

  // Fills kMatch state `s` (and its UTF-8 sub-states) for the atom's bytes or class.
  Status PlaceMatch(const Atom& a, uint32_t s) {
    if (a.literal_byte >= 0) {
      std::array<uint64_t, 4> bits{};
      bits[a.literal_byte >> 6] |= uint64_t{1} << (a.literal_byte & 63);
      p_.states_[s].byte_set = ByteSet(bits);
      p_.states_[s].trans_begin = p_.states_[s].trans_end =
          static_cast<uint32_t>(p_.transitions_.size());
      return Status::Ok();
    }
    std::vector<ByteSequence> seqs;
    for (CharRange c : a.ranges) Utf8Sequences(c.lo, c.hi, &seqs);
    // A trie of the sequences keyed by identical byte ranges; node 0 is state s.
    struct Node {
      std::array<uint64_t, 4> complete{};
      std::vector<std::pair<ByteRange, size_t>> children;
    };
    std::vector<Node> trie(1);
    for (const ByteSequence& seq : seqs) {
      size_t node = 0;
      for (size_t k = 0; k + 1 < seq.size(); ++k) {
        size_t child = 0;
        for (auto& [range, idx] : trie[node].children) {
          if (range == seq[k]) child = idx;
        }
        if (child == 0) {
          child = trie.size();
          trie[node].children.push_back({seq[k], child});
          trie.emplace_back();
        }
        node = child;
      }
      for (int b = seq.back().lo; b <= seq.back().hi; ++b) {
        trie[node].complete[b >> 6] |= uint64_t{1} << (b & 63);
      }
    }
    if (p_.states_.size() + trie.size() > Program::kMaxStates) return TooLarge();
    std::vector<uint32_t> ids(trie.size());
    ids[0] = s;
    const uint32_t next = p_.states_[s].next;
    for (size_t i = 1; i < trie.size(); ++i) {
      ids[i] = static_cast<uint32_t>(p_.states_.size());
      ProgramState sub;
      sub.kind = StateKind::kMatch;
      sub.next = next;
      p_.states_.push_back(sub);
    }
    for (size_t i = 0; i < trie.size(); ++i) {
      ProgramState& st = p_.states_[ids[i]];
      st.byte_set = ByteSet(trie[i].complete);
      st.trans_begin = static_cast<uint32_t>(p_.transitions_.size());
      for (auto& [range, child] : trie[i].children) {
        p_.transitions_.push_back({range.lo, range.hi, ids[child]});
      }
      st.trans_end = static_cast<uint32_t>(p_.transitions_.size());
    }
    return Status::Ok();
  }

  const Grammar& g_;
  Program p_;
  std::vector<const Expr*> pending_;
  std::vector<std::unique_ptr<Expr>> owned_;
  std::map<std::array<uint64_t, 4>, uint32_t> byte_set_index_;
};

Result<Program> Program::Lower(const Grammar& g) { return ProgramBuilder(g).Build(); }

}  // namespace jisu::grammar
