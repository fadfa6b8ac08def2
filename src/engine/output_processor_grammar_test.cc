// Structured output in the per-request output path, on the bundled model's tokenizer with
// made-up logits: the mask overrides the model's favourite when the grammar forbids it, the
// request stops once the grammar is complete, EOS only where allowed, drafts trimmed to the
// grammar, logprobs still from the raw row.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "engine/output_processor.h"
#include "grammar/grammar_compiler.h"
#include "model/model.h"
#include "tests/test_util.h"

namespace jisu {
namespace {

class OutputProcessorGrammarTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load((testing::SourceDir() / "models" / "tiny-llama").string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value().release();
    compiler_ = new grammar::GrammarCompiler(
        grammar::TokenVocab::FromTokenizer(model_->tokenizer(), vocab(), model_->eos_ids()));
  }
  static void TearDownTestSuite() {
    delete compiler_;
    delete model_;
  }
  static int32_t vocab() { return static_cast<int32_t>(model_->config().vocab_size); }
  static int32_t Id(const char* piece) {
    auto id = model_->tokenizer().TokenToId(piece);
    EXPECT_TRUE(id.has_value()) << piece;
    return id.value_or(0);
  }

  std::unique_ptr<OutputProcessor> Make(StructuredOutput::Kind kind, const std::string& text,
                                        SamplingParams p = {}, int32_t top_logprobs = -1) {
    p.temperature = 0;
    p.max_tokens = 64;
    p.structured.kind = kind;
    p.structured.text = text;
    EXPECT_TRUE(p.Validate().ok());
    auto g = compiler_->Compile(p.structured);
    EXPECT_TRUE(g.ok()) << g.status().message();
    return std::make_unique<OutputProcessor>(p, top_logprobs, model_->tokenizer(),
                                             model_->eos_ids(), vocab(), *g);
  }

  // Greedy steps where the model "prefers" `favourite` (highest logit) and then `second`.
  static SampledToken Step(OutputProcessor* p, int32_t favourite, int32_t second) {
    std::vector<float> logits(static_cast<size_t>(vocab()), 0.0f);
    logits[static_cast<size_t>(second)] = 5.0f;
    logits[static_cast<size_t>(favourite)] = 10.0f;
    return p->OnToken(logits.data(), 0, {}, {});
  }

  static Model* model_;
  static grammar::GrammarCompiler* compiler_;
};

Model* OutputProcessorGrammarTest::model_ = nullptr;
grammar::GrammarCompiler* OutputProcessorGrammarTest::compiler_ = nullptr;

TEST_F(OutputProcessorGrammarTest, MaskOverridesTheModelAndStopsWhenComplete) {
  auto p = Make(StructuredOutput::Kind::kRegex, "(one|two)");
  // A device that samples applies the same mask (FillGrammarMasks): no host row needed.
  EXPECT_FALSE(p->NeedsHostLogits());
  RowSampling row;
  p->PlanDeviceRow(&row);
  EXPECT_TRUE(row.on_device && row.masked);
  const int32_t maybe = Id("maybe");
  const int32_t one = Id("one");
  // The model wants "maybe"; the grammar only allows what spells one/two.
  SampledToken t = Step(p.get(), maybe, one);
  EXPECT_EQ(t.token_id, one);
  EXPECT_TRUE(t.finished);  // "one" completes the grammar and nothing may follow
  EngineOutput o;
  EXPECT_EQ(p->Emit(FinishReason::kNone, &o), FinishReason::kStop);
  EXPECT_EQ(o.text, "one");
}

TEST_F(OutputProcessorGrammarTest, EosOnlyOnceTheGrammarIsComplete) {
  ASSERT_FALSE(model_->eos_ids().empty());
  const int32_t eos = model_->eos_ids()[0];
  auto p = Make(StructuredOutput::Kind::kGrammar, "root ::= [a-z]+");
  const int32_t a = Id("a");
  // EOS is the favourite but the grammar needs a letter first.
  SampledToken t = Step(p.get(), eos, a);
  EXPECT_EQ(t.token_id, a);
  EXPECT_FALSE(t.finished);
  t = Step(p.get(), eos, a);  // now complete: EOS allowed
  EXPECT_EQ(t.token_id, eos);
  EXPECT_TRUE(t.finished);
  EngineOutput o;
  EXPECT_EQ(p->Emit(FinishReason::kNone, &o), FinishReason::kStop);
  EXPECT_EQ(o.text, "a");
}

TEST_F(OutputProcessorGrammarTest, IgnoreEosKeepsGoingWhileTheGrammarAllows) {
  SamplingParams sp;
  sp.ignore_eos = true;
  auto p = Make(StructuredOutput::Kind::kGrammar, "root ::= [a-z]+", sp);
  const int32_t eos = model_->eos_ids()[0];
  const int32_t a = Id("a");
  Step(p.get(), eos, a);
  SampledToken t = Step(p.get(), eos, a);
  EXPECT_EQ(t.token_id, a);  // EOS masked out although the grammar is complete
  EXPECT_FALSE(t.finished);
}

TEST_F(OutputProcessorGrammarTest, LengthCutsAnIncompleteOutput) {
  auto p = Make(StructuredOutput::Kind::kJsonObject, "");
  const int32_t brace = Id("{");
  Step(p.get(), brace, brace);
  EngineOutput o;
  // The scheduler's max_tokens/context limit: finish "length", the JSON left open (as OpenAI).
  EXPECT_EQ(p->Emit(FinishReason::kLength, &o), FinishReason::kLength);
  EXPECT_EQ(o.text, "{");
}

TEST_F(OutputProcessorGrammarTest, LogprobsStayRaw) {
  auto p = Make(StructuredOutput::Kind::kRegex, "(one|two)", {}, /*top_logprobs=*/1);
  const int32_t maybe = Id("maybe");
  const int32_t one = Id("one");
  Step(p.get(), maybe, one);
  EngineOutput o;
  p->Emit(FinishReason::kNone, &o);
  ASSERT_EQ(o.logprobs.size(), 1u);
  EXPECT_EQ(o.logprobs[0].token_id, one);
  ASSERT_EQ(o.logprobs[0].top.size(), 1u);
  EXPECT_EQ(o.logprobs[0].top[0].id, maybe);  // the model's own favourite, though masked
  const double lse = std::log(std::exp(10.0) + std::exp(5.0) + (vocab() - 2));
  EXPECT_NEAR(o.logprobs[0].logprob, 5.0 - lse, 1e-4);
}

TEST_F(OutputProcessorGrammarTest, TrimDraftsStopsAtTheFirstRefusedToken) {
  auto p = Make(StructuredOutput::Kind::kGrammar, "root ::= \"ab\" [0-9]+");
  std::vector<int32_t> drafts = {Id("ab"), Id("1"), Id("2"), Id("x"), Id("3")};
  p->TrimDrafts(&drafts);
  EXPECT_EQ(drafts, (std::vector<int32_t>{Id("ab"), Id("1"), Id("2")}));
  // The matcher was rolled back: the first token is still free to be "ab".
  SampledToken t = Step(p.get(), Id("ab"), Id("ab"));
  EXPECT_EQ(t.token_id, Id("ab"));
}

TEST_F(OutputProcessorGrammarTest, LogitBiasAppliesAndRidesWithDeviceRows) {
  SamplingParams sp;
  sp.temperature = 0;
  sp.max_tokens = 8;
  sp.logit_bias = {{Id("one"), 100.0f}};
  OutputProcessor p(sp, -1, model_->tokenizer(), model_->eos_ids(), vocab());
  EXPECT_FALSE(p.NeedsHostLogits());
  RowSampling row;
  p.PlanDeviceRow(&row);
  EXPECT_FALSE(row.masked);
  ASSERT_EQ(row.logit_bias.size(), 1u);
  EXPECT_EQ(row.logit_bias[0], std::make_pair(Id("one"), 100.0f));
  EXPECT_EQ(Step(&p, Id("maybe"), Id("no")).token_id, Id("one"));
}

}  // namespace
}  // namespace jisu
