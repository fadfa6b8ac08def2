// The per-request output path on the bundled model's tokenizer, with made-up logits: a stop
// string across tokens, EOS, logprobs, max_tokens and the text held back until the finish.
#include "engine/output_processor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "model/model.h"
#include "tests/test_util.h"

namespace jisu {
namespace {

class OutputProcessorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load((testing::SourceDir() / "models" / "tiny-llama").string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value().release();
  }
  static void TearDownTestSuite() { delete model_; }

  static int32_t vocab() { return static_cast<int32_t>(model_->config().vocab_size); }
  static std::vector<int32_t> Ids(const std::string& text) {
    return model_->tokenizer().Encode(text, /*add_special=*/false);
  }
  // Logits under which greedy picks `id`.
  static std::vector<float> Peak(int32_t id) {
    std::vector<float> l(static_cast<size_t>(vocab()), 0.0f);
    l[static_cast<size_t>(id)] = 10.0f;
    return l;
  }
  std::unique_ptr<OutputProcessor> Make(SamplingParams p, int32_t top_logprobs = -1) {
    p.temperature = 0;
    EXPECT_TRUE(p.Validate().ok());
    return std::make_unique<OutputProcessor>(p, top_logprobs, model_->tokenizer(), eos_, vocab());
  }

  struct Run {
    std::vector<int32_t> tokens;
    std::string text;
    FinishReason reason = FinishReason::kNone;
    int64_t tokens_fed = 0;
  };
  // Greedy over `ids`, one Emit per token, until the processor finishes or `ids` run out.
  Run Feed(OutputProcessor* p, const std::vector<int32_t>& ids) {
    Run r;
    for (int32_t id : ids) {
      std::vector<float> logits = Peak(id);
      const SampledToken t = p->OnToken(logits.data(), 0, {}, r.tokens);
      EXPECT_EQ(t.token_id, id);
      ++r.tokens_fed;
      EngineOutput o;
      r.reason = p->Emit(FinishReason::kNone, &o);
      EXPECT_EQ(t.finished, r.reason == FinishReason::kStop);
      EXPECT_EQ(o.finished, r.reason != FinishReason::kNone);
      r.tokens.insert(r.tokens.end(), o.token_ids.begin(), o.token_ids.end());
      r.text += o.text;
      if (o.finished) {
        EXPECT_EQ(o.finish_reason, r.reason);
        break;
      }
    }
    return r;
  }

  // The text still held back, released by a finish.
  static std::string Flushed(OutputProcessor* p) {
    EngineOutput o;
    p->Emit(FinishReason::kLength, &o);
    return o.text;
  }

  static Model* model_;
  std::vector<int32_t> eos_;
};

Model* OutputProcessorTest::model_ = nullptr;

TEST_F(OutputProcessorTest, StopStringAcrossTokensEndsTheTextBeforeIt) {
  const std::vector<int32_t> ids = Ids("Hello world, hello again");
  SamplingParams p;
  p.max_tokens = 100;
  const Run plain = Feed(Make(p).get(), ids);
  ASSERT_EQ(plain.reason, FinishReason::kNone);
  const size_t at = plain.text.find("o wor");
  ASSERT_NE(at, std::string::npos) << plain.text;

  p.stop = {"o wor"};
  const Run stopped = Feed(Make(p).get(), ids);
  EXPECT_EQ(stopped.reason, FinishReason::kStop);
  EXPECT_EQ(stopped.text, plain.text.substr(0, at));
  EXPECT_LT(stopped.tokens_fed, static_cast<int64_t>(ids.size()));
  EXPECT_EQ(stopped.tokens.size(), static_cast<size_t>(stopped.tokens_fed));
  // The stop string spans several tokens: none of them alone holds it.
  for (int32_t id : ids) {
    EXPECT_EQ(model_->tokenizer().Decode(std::vector<int32_t>{id}, true).find("o wor"),
              std::string::npos);
  }
}

TEST_F(OutputProcessorTest, HeldBackStopPrefixIsReleasedAtTheFinish) {
  const std::vector<int32_t> ids = Ids("Hello world");
  SamplingParams p;
  p.max_tokens = static_cast<int32_t>(ids.size());
  const Run plain = Feed(Make(p).get(), ids);
  p.stop = {"world!"};  // "world" is held back as a possible start of the stop string
  const Run r = Feed(Make(p).get(), ids);
  EXPECT_EQ(r.reason, FinishReason::kLength);
  EXPECT_EQ(r.text, plain.text);
  EXPECT_NE(r.text.find("world"), std::string::npos);
}

TEST_F(OutputProcessorTest, EosStopsUnlessIgnored) {
  const std::vector<int32_t> ids = Ids("Hello world");
  ASSERT_GE(ids.size(), 2u);
  eos_ = {ids[1]};
  SamplingParams p;
  p.max_tokens = 100;
  const Run r = Feed(Make(p).get(), ids);
  EXPECT_EQ(r.reason, FinishReason::kStop);
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{ids[0], ids[1]}));  // the EOS token is output
  SamplingParams one = p;
  one.max_tokens = 1;
  EXPECT_EQ(r.text, Feed(Make(one).get(), ids).text);  // ... but not its text

  p.ignore_eos = true;
  const Run ignored = Feed(Make(p).get(), ids);
  EXPECT_EQ(ignored.reason, FinishReason::kNone);
  EXPECT_EQ(ignored.tokens, ids);
}

TEST_F(OutputProcessorTest, MaxTokensAndLimitsFinishWithLength) {
  const std::vector<int32_t> ids = Ids("Hello world, hello again");
  ASSERT_GE(ids.size(), 4u);
  SamplingParams p;
  p.max_tokens = 3;
  const Run r = Feed(Make(p).get(), ids);
  EXPECT_EQ(r.reason, FinishReason::kLength);
  EXPECT_EQ(r.tokens_fed, 3);

  // The scheduler's limit (a full context) finishes earlier.
  p.max_tokens = 100;
  auto proc = Make(p);
  std::vector<float> logits = Peak(ids[0]);
  proc->OnToken(logits.data(), 0, {}, {});
  EngineOutput o;
  EXPECT_EQ(proc->Emit(FinishReason::kLength, &o), FinishReason::kLength);
  EXPECT_TRUE(o.finished);
}

TEST_F(OutputProcessorTest, SeveralTokensPerStepAreOneOutputAndDeviceTokensPassThrough) {
  const std::vector<int32_t> ids = Ids("Hello world");
  ASSERT_GE(ids.size(), 2u);
  SamplingParams p;
  p.max_tokens = 100;
  auto proc = Make(p);
  EXPECT_FALSE(proc->NeedsHostLogits());
  std::vector<float> logits = Peak(ids[0]);
  proc->OnToken(logits.data(), 0, {}, {});
  proc->OnToken(nullptr, ids[1], {}, {});  // drawn on the device
  EngineOutput o;
  EXPECT_EQ(proc->Emit(FinishReason::kNone, &o), FinishReason::kNone);
  EXPECT_EQ(o.token_ids, (std::vector<int32_t>{ids[0], ids[1]}));
  SamplingParams two = p;
  two.max_tokens = 2;
  EXPECT_EQ(o.text + Flushed(proc.get()), Feed(Make(two).get(), ids).text);
  EXPECT_EQ(proc->num_output_tokens(), 2);
}

TEST_F(OutputProcessorTest, LogprobsComeFromTheRawRow) {
  SamplingParams p;
  p.max_tokens = 10;
  auto proc = Make(p, /*top_logprobs=*/2);
  EXPECT_TRUE(proc->NeedsHostLogits());
  std::vector<float> logits(static_cast<size_t>(vocab()), 0.0f);
  logits[7] = 3.0f;
  logits[5] = 2.0f;
  const SampledToken t = proc->OnToken(logits.data(), 0, {}, {});
  EXPECT_EQ(t.token_id, 7);
  EngineOutput o;
  proc->Emit(FinishReason::kNone, &o);
  ASSERT_EQ(o.logprobs.size(), 1u);
  const double lse = std::log(std::exp(3.0) + std::exp(2.0) + (vocab() - 2));
  EXPECT_EQ(o.logprobs[0].token_id, 7);
  EXPECT_NEAR(o.logprobs[0].logprob, 3.0 - lse, 1e-4);
  ASSERT_EQ(o.logprobs[0].top.size(), 2u);
  EXPECT_EQ(o.logprobs[0].top[0].id, 7);
  EXPECT_EQ(o.logprobs[0].top[1].id, 5);
  EXPECT_NEAR(o.logprobs[0].top[1].logprob, 2.0 - lse, 1e-4);
}

}  // namespace
}  // namespace jisu
