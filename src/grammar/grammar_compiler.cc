#include "grammar/grammar_compiler.h"

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema_to_grammar.h"
#include "grammar/program.h"
#include "grammar/regex_to_grammar.h"

namespace jisu::grammar {

Result<Grammar> ConstraintGrammar(const StructuredOutput& c) {
  switch (c.kind) {
    case StructuredOutput::Kind::kJsonObject:
      return JsonObjectGrammar();
    case StructuredOutput::Kind::kJsonSchema:
      return JsonSchemaToGrammar(c.text, JsonSchemaOptions{c.strict});
    case StructuredOutput::Kind::kGrammar:
      return ParseGbnf(c.text);
    case StructuredOutput::Kind::kRegex:
      return RegexToGrammar(c.text);
    case StructuredOutput::Kind::kNone:
      break;
  }
  return Status::InvalidArgument("no structured output constraint");
}

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenVocab> vocab, size_t capacity)
    : vocab_(std::move(vocab)), capacity_(capacity == 0 ? 1 : capacity) {}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::Compile(const StructuredOutput& c) {
  std::string key;
  key.reserve(c.text.size() + 2);
  key += static_cast<char>(c.kind);
  key += c.strict ? '1' : '0';
  key += c.text;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++hits_;
      return it->second->second;
    }
    ++misses_;
  }
  // Compiled outside the lock: a big schema must not stall other requests' lookups.
  JISU_ASSIGN_OR_RETURN(Grammar g, ConstraintGrammar(c));
  JISU_ASSIGN_OR_RETURN(Program p, Program::Lower(g));
  auto compiled = std::make_shared<const CompiledGrammar>(std::move(p), vocab_, kMaxStackDepth);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second->second;  // compiled meanwhile by another request
  lru_.emplace_front(key, compiled);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return std::shared_ptr<const CompiledGrammar>(compiled);
}

GrammarCacheStats GrammarCompiler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {hits_, misses_, static_cast<int64_t>(lru_.size())};
}

}  // namespace jisu::grammar
