// The matcher and the mask cache: the cached mask of every step of random walks equals the
// brute-force mask (each token tried on the matcher and rolled back), on real vocabularies;
// rollback restores earlier states exactly; bounds hold.
#include "grammar/matcher.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "format/gguf.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_test_util.h"
#include "model/model.h"
#include "tests/test_util.h"

namespace jisu::grammar {
namespace {

using testing::Accepts;
using testing::BruteForceMask;
using testing::CompileConstraint;
using testing::CompileGrammar;

std::shared_ptr<const TokenVocab> TinyLlamaVocab() {
  static std::shared_ptr<const TokenVocab> vocab = [] {
    const auto dir = jisu::testing::SourceDir() / "models" / "tiny-llama";
    auto tok =
        Tokenizer::FromHuggingFace(testing::ReadFile((dir / "tokenizer.json").string()),
                                   testing::ReadFile((dir / "tokenizer_config.json").string()));
    EXPECT_TRUE(tok.ok()) << tok.status().message();
    std::vector<int32_t> eos = (*tok)->stop_ids();
    return TokenVocab::FromTokenizer(**tok, (*tok)->vocab_size(), eos);
  }();
  return vocab;
}

std::shared_ptr<const TokenVocab> SmolLM2Vocab() {
  static std::shared_ptr<const TokenVocab> vocab = []() -> std::shared_ptr<const TokenVocab> {
    auto path = jisu::testing::FindSmolLM2();
    if (!path) return nullptr;
    auto gguf = GgufFile::Open(*path);
    if (!gguf.ok()) return nullptr;
    auto data = ReadGgufTokenizerData(**gguf);
    if (!data.ok()) return nullptr;
    auto tok = Tokenizer::FromGguf(*data);
    if (!tok.ok()) return nullptr;
    return TokenVocab::FromTokenizer(**tok, (*tok)->vocab_size(), (*tok)->stop_ids());
  }();
  return vocab;
}

// A SentencePiece vocabulary whose decoder strips the first token's leading space (Llama 2's
// pipeline on a small vocabulary: tests/data/tokenizer/llama2).
std::shared_ptr<const TokenVocab> Llama2Vocab() {
  static std::shared_ptr<const TokenVocab> vocab = [] {
    const auto dir = jisu::testing::TestDataDir() / "tokenizer" / "llama2";
    auto tok =
        Tokenizer::FromHuggingFace(testing::ReadFile((dir / "tokenizer.json").string()),
                                   testing::ReadFile((dir / "tokenizer_config.json").string()));
    EXPECT_TRUE(tok.ok()) << tok.status().message();
    return TokenVocab::FromTokenizer(**tok, (*tok)->vocab_size(), (*tok)->stop_ids());
  }();
  return vocab;
}

StructuredOutput Schema(std::string text) {
  StructuredOutput c;
  c.kind = StructuredOutput::Kind::kJsonSchema;
  c.text = std::move(text);
  c.strict = true;
  return c;
}

StructuredOutput Gbnf(std::string text) {
  StructuredOutput c;
  c.kind = StructuredOutput::Kind::kGrammar;
  c.text = std::move(text);
  return c;
}

const char* kPersonSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    "kind": {"enum": ["a", "b", null]},
    "ok": {"type": "boolean"}
  },
  "required": ["name", "age"]
})";

// Random walk: at each step the cached mask must equal the brute-force one; then a random
// allowed token (EOS only when nothing else is allowed, to keep walks going) is accepted.
void RandomWalks(const std::shared_ptr<const CompiledGrammar>& g, int walks, int steps,
                 uint32_t seed) {
  std::mt19937 rng(seed);
  const TokenVocab& v = g->vocab();
  std::vector<uint32_t> mask(v.mask_words());
  for (int w = 0; w < walks; ++w) {
    GrammarMatcher m(g);
    std::string text;
    for (int s = 0; s < steps && !m.IsTerminated(); ++s) {
      m.FillMask(mask.data());
      const std::vector<uint32_t> brute = BruteForceMask(m);
      ASSERT_EQ(mask, brute) << "walk " << w << " step " << s << " after '" << text << "'";
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < v.size(); ++id) {
        if (((mask[id >> 5] >> (id & 31)) & 1) && !v.is_eos(id)) allowed.push_back(id);
      }
      if (allowed.empty()) break;
      const int32_t id = allowed[rng() % allowed.size()];
      ASSERT_TRUE(m.AcceptToken(id));
      text += v.bytes(id);
    }
  }
}

TEST(GrammarMatcherTest, CachedMaskEqualsBruteForceOnTinyLlamaVocab) {
  auto g = CompileConstraint(Schema(kPersonSchema), TinyLlamaVocab());
  ASSERT_TRUE(g);
  RandomWalks(g, 6, 40, 1);
}

TEST(GrammarMatcherTest, CachedMaskEqualsBruteForceOnSmolLM2Vocab) {
  auto v = SmolLM2Vocab();
  if (!v) GTEST_SKIP() << "SmolLM2 GGUF not installed";
  auto g = CompileConstraint(Schema(kPersonSchema), v);
  ASSERT_TRUE(g);
  RandomWalks(g, 3, 30, 2);
  StructuredOutput any;
  any.kind = StructuredOutput::Kind::kJsonObject;
  RandomWalks(CompileConstraint(any, v), 3, 30, 3);
}

TEST(GrammarMatcherTest, FirstTokenOfSentencePieceDropsItsSpace) {
  auto v = Llama2Vocab();
  ASSERT_FALSE(v->first_overrides().empty());
  // The text must start with a letter: "▁t" (" t" later, "t" as the first token) is allowed
  // first only because its space is dropped there.
  auto g = CompileConstraint(Gbnf("root ::= [a-z] [a-z ]*"), v);
  ASSERT_TRUE(g);
  int32_t spaced = -1;
  for (const auto& [id, bytes] : v->first_overrides()) {
    if (bytes == "t" && v->bytes(id) == " t") spaced = id;
  }
  ASSERT_GE(spaced, 0);
  GrammarMatcher m(g);
  std::vector<uint32_t> mask(v->mask_words());
  m.FillMask(mask.data());
  EXPECT_TRUE((mask[spaced >> 5] >> (spaced & 31)) & 1);
  EXPECT_EQ(mask, BruteForceMask(m));
  RandomWalks(g, 4, 12, 9);
  ASSERT_TRUE(m.AcceptToken(spaced));
  ASSERT_TRUE(m.Rollback(1));
  EXPECT_FALSE(m.AcceptBytes(" t"));  // what the token would add later
}

TEST(GrammarMatcherTest, CachedMaskEqualsBruteForceOnAmbiguousGrammar) {
  // Nullable pieces, nested repetitions and UTF-8 classes: several stacks at once.
  auto g = CompileConstraint(Gbnf("root ::= item (\" \"? \",\" \" \"? item)* \".\"?\n"
                                  "item ::= [a-zé€😀]+ | \"(\" root \")\" | [0-9]{1,3} \"x\"?\n"),
                             TinyLlamaVocab());
  ASSERT_TRUE(g);
  RandomWalks(g, 8, 30, 4);
}

TEST(GrammarMatcherTest, AcceptsExactlyTheLanguage) {
  auto g =
      CompileConstraint(Gbnf("root ::= \"a\" [b-d]+ \"e\" | \"x\"{2,3}"), testing::ByteVocab());
  ASSERT_TRUE(g);
  EXPECT_TRUE(Accepts(g, "abe"));
  EXPECT_TRUE(Accepts(g, "abcdde"));
  EXPECT_TRUE(Accepts(g, "xx"));
  EXPECT_TRUE(Accepts(g, "xxx"));
  EXPECT_FALSE(Accepts(g, "ae"));
  EXPECT_FALSE(Accepts(g, "abef"));
  EXPECT_FALSE(Accepts(g, "x"));
  EXPECT_FALSE(Accepts(g, "xxxx"));
  EXPECT_FALSE(Accepts(g, "ab"));  // a prefix: accepted bytes but not complete
  GrammarMatcher m(g);
  EXPECT_TRUE(m.AcceptBytes("ab"));
  EXPECT_FALSE(m.IsComplete());
  EXPECT_TRUE(m.AcceptBytes("e"));
  EXPECT_TRUE(m.IsComplete());
  EXPECT_TRUE(m.IsTerminated());  // nothing may follow
}

TEST(GrammarMatcherTest, EosOnlyWhenComplete) {
  auto v = testing::ByteVocab();
  auto g = CompileConstraint(Gbnf("root ::= \"ab\"+"), v);
  GrammarMatcher m(g);
  std::vector<uint32_t> mask(v->mask_words());
  m.FillMask(mask.data());
  EXPECT_FALSE((mask[256 >> 5] >> (256 & 31)) & 1);
  EXPECT_FALSE(m.AcceptToken(256));
  ASSERT_TRUE(m.AcceptBytes("ab"));
  m.FillMask(mask.data());
  EXPECT_TRUE((mask[256 >> 5] >> (256 & 31)) & 1);
  EXPECT_TRUE((mask['a' >> 5] >> ('a' & 31)) & 1);
  EXPECT_FALSE((mask['b' >> 5] >> ('b' & 31)) & 1);
  EXPECT_TRUE(m.AcceptToken(256));
  EXPECT_TRUE(m.IsTerminated());
  EXPECT_FALSE(m.AcceptBytes("a"));
}

// A constraint naming a special token may write it as that token (Mistral's [TOOL_CALLS]) as
// well as spelled out; other special tokens, EOS and a constraint without the name never get it.
TEST(GrammarMatcherTest, NamedSpecialTokensAreAllowedAsThemselves) {
  // 256: EOS "</s>"; 257: [TOOL_CALLS], named below; 258: [ARGS], not named.
  const auto base = testing::ByteVocab({"[TOOL_CALLS]", "[ARGS]"});
  auto bit = [](const std::vector<uint32_t>& m, int id) { return (m[id >> 5] >> (id & 31)) & 1; };
  StructuredOutput c = Gbnf("root ::= \"[TOOL_CALLS]\" [a-z]+ \"[ARGS]\"");
  c.special_tokens = {"[TOOL_CALLS]", "</s>", "[NOT_A_TOKEN]"};
  GrammarCompiler compiler(base);
  auto named = compiler.Compile(c);
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_EQ((*named)->vocab().bytes(257), "[TOOL_CALLS]");
  EXPECT_EQ((*named)->vocab().bytes(258), "");
  EXPECT_EQ((*named)->vocab().bytes(256), "");  // EOS stays EOS, named or not
  GrammarMatcher m(*named);
  std::vector<uint32_t> mask(base->mask_words());
  m.FillMask(mask.data());
  EXPECT_EQ(mask, BruteForceMask(m));
  EXPECT_TRUE(bit(mask, 257));
  EXPECT_TRUE(bit(mask, '['));  // spelled out too
  EXPECT_FALSE(bit(mask, 258));
  ASSERT_TRUE(m.AcceptToken(257));
  ASSERT_TRUE(m.AcceptBytes("f"));
  m.FillMask(mask.data());
  EXPECT_EQ(mask, BruteForceMask(m));
  EXPECT_FALSE(bit(mask, 258));  // [ARGS] is not named: only spelled out
  EXPECT_TRUE(m.AcceptBytes("[ARGS]"));
  EXPECT_TRUE(m.IsComplete());

  // Without the name, the special token is never allowed; with the names in another order,
  // the cached grammar (and its vocabulary) is the same one.
  StructuredOutput plain = c;
  plain.special_tokens.clear();
  auto unnamed = compiler.Compile(plain);
  ASSERT_TRUE(unnamed.ok());
  EXPECT_NE(unnamed->get(), named->get());
  GrammarMatcher u(*unnamed);
  u.FillMask(mask.data());
  EXPECT_FALSE(bit(mask, 257));
  EXPECT_FALSE(u.AcceptToken(257));
  StructuredOutput reordered = c;
  reordered.special_tokens = {"[NOT_A_TOKEN]", "[TOOL_CALLS]", "</s>", "[TOOL_CALLS]"};
  auto again = compiler.Compile(reordered);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), named->get());
  // A set naming no special token of the vocabulary compiles against the base vocabulary.
  StructuredOutput none = plain;
  none.special_tokens = {"[NOT_A_TOKEN]"};
  auto same_vocab = compiler.Compile(none);
  ASSERT_TRUE(same_vocab.ok());
  EXPECT_EQ(&(*same_vocab)->vocab(), base.get());
}

TEST(GrammarMatcherTest, RollbackRestoresEveryEarlierState) {
  auto v = TinyLlamaVocab();
  auto g = CompileConstraint(Schema(kPersonSchema), v);
  ASSERT_TRUE(g);
  std::mt19937 rng(7);
  GrammarMatcher m(g, MatcherOptions{.max_rollback = 16});
  std::vector<std::vector<uint32_t>> masks;
  std::vector<uint32_t> mask(v->mask_words());
  for (int s = 0; s < 24 && !m.IsTerminated(); ++s) {
    m.FillMask(mask.data());
    masks.push_back(mask);
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < v->size(); ++id) {
      if (((mask[id >> 5] >> (id & 31)) & 1) && !v->is_eos(id)) allowed.push_back(id);
    }
    ASSERT_FALSE(allowed.empty());
    ASSERT_TRUE(m.AcceptToken(allowed[rng() % allowed.size()]));
  }
  const int n = static_cast<int>(masks.size());
  EXPECT_EQ(m.num_rollback(), std::min(n, 16));
  EXPECT_FALSE(m.Rollback(17));
  for (int k : {1, 3, 5}) {
    ASSERT_TRUE(m.Rollback(k));
    m.FillMask(mask.data());
    EXPECT_EQ(mask, masks[static_cast<size_t>(m.num_tokens())]) << "after rolling back " << k;
  }
}

TEST(GrammarMatcherTest, RejectsLeftRecursionWithAHint) {
  auto g = ParseGbnf("root ::= root \"a\" | \"b\"");
  ASSERT_TRUE(g.ok());
  auto p = Program::Lower(*g);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("left-recursive"), std::string::npos) << p.status().message();
  // Hidden behind a nullable rule, and a repetition of something that may be empty.
  auto g2 = ParseGbnf("root ::= e root \"a\" | \"b\"\ne ::= \"\" | \"x\"");
  ASSERT_TRUE(g2.ok());
  EXPECT_FALSE(Program::Lower(*g2).ok());
  auto g3 = ParseGbnf("root ::= (\"a\"?)*");
  ASSERT_TRUE(g3.ok());
  EXPECT_FALSE(Program::Lower(*g3).ok());
}

TEST(GrammarMatcherTest, RejectsGrammarsThatCannotFinish) {
  auto g = ParseGbnf("root ::= \"a\" root");
  ASSERT_TRUE(g.ok());
  auto p = Program::Lower(*g);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("cannot produce"), std::string::npos);
}

TEST(GrammarMatcherTest, StackDepthIsBounded) {
  // Each "(" nests one frame; past the bound the deeper path is dropped, not grown.
  auto g = ParseGbnf("root ::= \"(\" root \")\" | \"x\"");
  ASSERT_TRUE(g.ok());
  auto p = Program::Lower(*g);
  ASSERT_TRUE(p.ok());
  auto c = std::make_shared<const CompiledGrammar>(std::move(*p), testing::ByteVocab(), 8);
  GrammarMatcher m(c);
  int opened = 0;
  while (m.AcceptBytes("(")) ++opened;
  EXPECT_GT(opened, 2);
  EXPECT_LT(opened, 8);
  EXPECT_TRUE(m.AcceptBytes("x"));
}

TEST(GrammarMatcherTest, MemoryStaysBoundedOverLongOutputs) {
  // A long generation: nodes are collected, so the pool stays proportional to the rollback
  // window, and the matcher keeps working.
  auto g = CompileConstraint(Gbnf("root ::= (\"[\" [a-z]* \"]\")*"), testing::ByteVocab());
  GrammarMatcher m(g, MatcherOptions{.max_rollback = 8, .max_nodes = 1 << 15});
  for (int i = 0; i < 200000; ++i)
    ASSERT_TRUE(m.AcceptBytes(i % 50 == 0 ? "[" : (i % 50 == 49 ? "]" : "q")));
  EXPECT_TRUE(m.error().ok()) << m.error().message();
}

}  // namespace
}  // namespace jisu::grammar
