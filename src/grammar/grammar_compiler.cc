#include "grammar/grammar_compiler.h"

#include <algorithm>

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

namespace {

// The names sorted, each with its length: one key per set, whatever the order.
std::string NamesKey(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string key;
  for (const std::string& n : names) key += std::to_string(n.size()) + ":" + n;
  return key;
}

}  // namespace

std::shared_ptr<const TokenVocab> GrammarCompiler::VocabFor(
    const std::vector<std::string>& special_tokens, const std::string& names_key) {
  if (special_tokens.empty()) return vocab_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = variants_.find(names_key);
    if (it != variants_.end()) return it->second;
  }
  auto v = TokenVocab::WithSpecials(vocab_, special_tokens);
  std::lock_guard<std::mutex> lock(mu_);
  if (variants_.size() >= kMaxVocabVariants) variants_.clear();  // bounded; rebuilt on demand
  return variants_.emplace(names_key, std::move(v)).first->second;
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::Compile(const StructuredOutput& c) {
  const std::string names = NamesKey(c.special_tokens);
  std::string key;
  key.reserve(c.text.size() + names.size() + 16);
  key += static_cast<char>(c.kind);
  key += c.strict ? '1' : '0';
  key += std::to_string(names.size()) + ":" + names;
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
  auto compiled = std::make_shared<const CompiledGrammar>(
      std::move(p), VocabFor(c.special_tokens, names), kMaxStackDepth);
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
