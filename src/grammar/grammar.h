// The grammar IR: context-free rules over Unicode code points (UTF-8 text), the one form every
// constraint is turned into (GBNF text, a regex, a JSON schema; src/grammar/*_to_grammar.h) and
// that the matcher's program is lowered from (program.h).
//
// A rule's body is an expression tree: literals (UTF-8 bytes), character classes (code point
// ranges, possibly negated), references to rules, sequences, alternatives and repetition
// {min, max} (max = kUnbounded for * and +). Expressions are plain values; rules refer to each
// other by index, so recursion (JSON values, $ref cycles) is just an index. Rule names are
// unique; the root is rule `root` (index Grammar::root).
//
// Limits: builders check the counts below, because grammars come from untrusted request bodies;
// the program (program.h) bounds the lowered size again.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "jisu/status.h"

namespace jisu::grammar {

inline constexpr uint32_t kUnbounded = 0xFFFFFFFFu;
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

struct CharRange {
  uint32_t lo = 0, hi = 0;  // inclusive code points
  bool operator==(const CharRange&) const = default;
};

struct Expr {
  enum class Kind : uint8_t { kEmpty, kLiteral, kClass, kRef, kSeq, kAlt, kRepeat };
  Kind kind = Kind::kEmpty;
  std::string literal;            // kLiteral: UTF-8 bytes (non-empty)
  std::vector<CharRange> ranges;  // kClass: code point ranges (any order, may overlap)
  bool negated = false;           // kClass: every code point outside `ranges` (no surrogates)
  uint32_t rule = 0;              // kRef
  std::vector<Expr> children;     // kSeq, kAlt; kRepeat: exactly one
  uint32_t min = 0, max = 0;      // kRepeat: min <= max, max may be kUnbounded

  static Expr Empty() { return Expr{}; }
  static Expr Literal(std::string_view bytes);  // Empty() for ""
  static Expr Class(std::vector<CharRange> ranges, bool negated = false);
  static Expr Char(uint32_t cp) { return Class({{cp, cp}}); }
  static Expr AnyChar() { return Class({}, /*negated=*/true); }
  static Expr Ref(uint32_t rule);
  static Expr Seq(std::vector<Expr> items);  // flattened; one item is returned as is
  static Expr Alt(std::vector<Expr> items);  // flattened; one item is returned as is
  static Expr Repeat(Expr item, uint32_t min, uint32_t max);
  static Expr Optional(Expr item) { return Repeat(std::move(item), 0, 1); }
  static Expr Star(Expr item) { return Repeat(std::move(item), 0, kUnbounded); }
  static Expr Plus(Expr item) { return Repeat(std::move(item), 1, kUnbounded); }
};

// The positive ranges of a class: sorted, merged, surrogates (U+D800..U+DFFF) removed, the
// complement taken when negated. Empty when the class matches nothing.
std::vector<CharRange> NormalizeClass(const std::vector<CharRange>& ranges, bool negated);

struct Rule {
  std::string name;
  Expr body;
};

class Grammar {
 public:
  // Bounds on what a builder may create (requests are untrusted).
  static constexpr size_t kMaxRules = 20000;
  static constexpr uint32_t kMaxRepeat = 10000;  // a finite {m,n} bound

  // Adds a rule named `name` (must be new) with an empty body; returns its index.
  Result<uint32_t> AddRule(std::string name);
  // A new rule whose name starts with `base` and is not taken yet (for generated rules).
  Result<uint32_t> AddUniqueRule(std::string_view base);
  // The index of `name`, or -1.
  int64_t Find(std::string_view name) const;
  void SetBody(uint32_t rule, Expr body) { rules_[rule].body = std::move(body); }

  const std::vector<Rule>& rules() const { return rules_; }
  const Rule& rule(uint32_t i) const { return rules_[i]; }
  uint32_t root() const { return root_; }
  void set_root(uint32_t root) { root_ = root; }

  // GBNF text of the grammar (one rule a line, root first), for messages and tests; parsing it
  // back gives the same language.
  std::string ToGbnf() const;

 private:
  std::vector<Rule> rules_;
  std::unordered_map<std::string, uint32_t> index_;
  uint32_t root_ = 0;
};

// GBNF spelling of one expression (rule references by name).
std::string ExprToGbnf(const Expr& e, const Grammar& g);

// Copies every rule of `from` into `into`, each renamed `prefix` + its name (made unique), its
// references remapped; returns the index in `into` of from's root. How a grammar built on its
// own (a JSON Schema's) becomes one part of another (a tool call's arguments in the call syntax)
// without its rule names meeting the other's.
Result<uint32_t> ImportRules(const Grammar& from, std::string_view prefix, Grammar* into);

}  // namespace jisu::grammar
