// Helpers for the grammar tests: compile a constraint for a vocabulary, check a text, and the
// brute-force mask (every token tried on the matcher and rolled back) the cached mask must equal.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_compiler.h"
#include "grammar/matcher.h"
#include "grammar/program.h"
#include "grammar/token_vocab.h"
#include "tokenizer/tokenizer.h"

namespace jisu::grammar::testing {

// Every single byte (ids 0-255), EOS (256, special text "</s>"), then `specials` as excluded
// special tokens (ids 257, ...): enough to spell anything.
inline std::shared_ptr<const TokenVocab> ByteVocab(const std::vector<std::string>& specials = {}) {
  std::vector<std::string> t;
  for (int b = 0; b < 256; ++b) t.push_back(std::string(1, static_cast<char>(b)));
  t.push_back("");  // 256: EOS
  std::vector<std::pair<int32_t, std::string>> special_ids = {{256, "</s>"}};
  for (const std::string& s : specials) {
    special_ids.emplace_back(static_cast<int32_t>(t.size()), s);
    t.push_back("");
  }
  return TokenVocab::FromBytes(std::move(t), {256}, {}, std::move(special_ids));
}

inline std::shared_ptr<const CompiledGrammar> CompileGrammar(const Grammar& g,
                                                             std::shared_ptr<const TokenVocab> v) {
  auto p = Program::Lower(g);
  EXPECT_TRUE(p.ok()) << p.status().message();
  if (!p.ok()) return nullptr;
  return std::make_shared<const CompiledGrammar>(std::move(*p), std::move(v), 1024);
}

inline std::shared_ptr<const CompiledGrammar> CompileConstraint(
    const StructuredOutput& c, std::shared_ptr<const TokenVocab> v) {
  auto g = ConstraintGrammar(c);
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return nullptr;
  return CompileGrammar(*g, std::move(v));
}

// Whether the whole text is a complete sentence of the grammar.
inline bool Accepts(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
  GrammarMatcher m(g);
  return m.AcceptBytes(text) && m.IsComplete();
}

// The allowed tokens found by trying each one (and rolling it back).
inline std::vector<uint32_t> BruteForceMask(GrammarMatcher& m) {
  const TokenVocab& v = m.grammar().vocab();
  std::vector<uint32_t> mask(v.mask_words(), 0);
  for (int32_t id = 0; id < v.size(); ++id) {
    if (m.AcceptToken(id)) {
      mask[id >> 5] |= 1u << (id & 31);
      EXPECT_TRUE(m.Rollback(1));
    }
  }
  return mask;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace jisu::grammar::testing
