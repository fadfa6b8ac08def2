// Constraints (the public StructuredOutput) -> compiled grammars for one model's vocabulary, with
// an LRU cache keyed by the constraint (kind, strictness, special tokens, text): the same schema
// sent by many requests is parsed, lowered and mask-cached once. A constraint naming special
// tokens compiles against the vocabulary that holds them (TokenVocab::WithSpecials, kept per
// set of names: in practice one per tool-call format). One compiler per model (the Engine owns
// it), so the tokenizer is part of the key by construction. Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"
#include "grammar/token_vocab.h"
#include "jisu/sampling_params.h"
#include "jisu/status.h"

namespace jisu::grammar {

// The grammar IR of a constraint (no vocabulary needed: the server's and the fuzzer's check).
Result<Grammar> ConstraintGrammar(const StructuredOutput& constraint);

struct GrammarCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t size = 0;
};

class GrammarCompiler {
 public:
  static constexpr uint32_t kMaxStackDepth = 1024;  // nesting a generated text may reach

  GrammarCompiler(std::shared_ptr<const TokenVocab> vocab, size_t capacity = 64);

  // InvalidArgument with the reason for a constraint that does not compile.
  Result<std::shared_ptr<const CompiledGrammar>> Compile(const StructuredOutput& constraint);

  const TokenVocab& vocab() const { return *vocab_; }
  GrammarCacheStats stats() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const CompiledGrammar>>;
  // `names_key`: NamesKey of `special_tokens`, which Compile has computed already.
  std::shared_ptr<const TokenVocab> VocabFor(const std::vector<std::string>& special_tokens,
                                             const std::string& names_key);

  static constexpr size_t kMaxVocabVariants = 8;
  std::shared_ptr<const TokenVocab> vocab_;
  size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const TokenVocab>> variants_;  // by names
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace jisu::grammar
