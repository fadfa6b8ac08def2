// libFuzzer target: arbitrary bytes as a structured-output constraint, as a request body brings
// it (the first byte picks GBNF, JSON Schema, regex or strict JSON Schema; the rest is the
// text), compiled for a byte vocabulary, then a matcher fed the text's own bytes with a token
// mask after each. An error is the expected answer to most inputs; a crash, a sanitizer report,
// a hang or a mask that allows a token the matcher then refuses is not.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_compiler.h"
#include "grammar/matcher.h"
#include "grammar/program.h"

namespace {

std::shared_ptr<const jisu::grammar::TokenVocab> Vocab() {
  static const auto vocab = [] {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
    for (const char* t : {"{\"", "\":", "\",", "true", "null", "  ", "ab", "é"})
      tokens.push_back(t);
    tokens.push_back("");  // EOS
    const int32_t eos = static_cast<int32_t>(tokens.size()) - 1;
    return jisu::grammar::TokenVocab::FromBytes(std::move(tokens), {eos});
  }();
  return vocab;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using jisu::StructuredOutput;
  if (size == 0) return 0;
  StructuredOutput c;
  static constexpr StructuredOutput::Kind kKinds[] = {
      StructuredOutput::Kind::kGrammar, StructuredOutput::Kind::kJsonSchema,
      StructuredOutput::Kind::kRegex, StructuredOutput::Kind::kJsonSchema};
  c.kind = kKinds[data[0] % 4];
  c.strict = data[0] % 4 == 3;
  c.text.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto g = jisu::grammar::ConstraintGrammar(c);
  if (!g.ok()) {
    if (g.status().message().empty()) __builtin_trap();
    return 0;
  }
  (void)g->ToGbnf();
  auto p = jisu::grammar::Program::Lower(*g);
  if (!p.ok()) return 0;
  auto compiled =
      std::make_shared<const jisu::grammar::CompiledGrammar>(std::move(*p), Vocab(), 64);
  jisu::grammar::GrammarMatcher m(compiled,
                                  {.max_rollback = 4, .max_nodes = 1 << 16, .max_tops = 256});
  std::vector<uint32_t> mask(Vocab()->mask_words());
  // Walk: at each step take the first allowed token after a position chosen by the input.
  for (size_t step = 0; step < 16 && !m.IsTerminated() && m.error().ok(); ++step) {
    m.FillMask(mask.data());
    const int32_t n = Vocab()->size();
    const int32_t start = static_cast<int32_t>(data[(step * 7) % size]) % n;
    int32_t chosen = -1;
    for (int32_t k = 0; k < n; ++k) {
      const int32_t id = (start + k) % n;
      if ((mask[id >> 5] >> (id & 31)) & 1) {
        chosen = id;
        break;
      }
    }
    if (chosen < 0) break;
    if (!m.AcceptToken(chosen) && m.error().ok()) __builtin_trap();  // the mask allowed it
    if (step % 5 == 4) (void)m.Rollback(1);
  }
  return 0;
}
