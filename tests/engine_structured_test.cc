// Structured output through the engine on the bundled model: constrained requests in one
// continuous batch produce JSON that parses and has the schema's shape; with speculative
// decoding (a scripted drafter that proposes the plain constrained continuation with random
// corruptions, or the model's unconstrained favourites, which the grammar forbids) greedy
// outputs are exactly those of plain decoding; a drafted token the grammar refuses is rejected
// by the verify path even when it is fed; bad constraints are refused at Submit.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>

#include "engine/engine.h"
#include "engine/step_runner.h"
#include "tests/structured_test_util.h"
#include "tests/test_util.h"
#include "tests/tiny_llama_suite.h"

namespace jisu {
namespace {

using testing::ExpectValid;
using testing::Result;
using testing::RunAll;
using testing::ScriptedDrafter;

using namespace std::chrono_literals;

class EngineStructuredTest : public testing::TinyLlamaSuite {
 protected:
  static EngineOptions Options() {
    EngineOptions o;
    o.kv_blocks = 128;
    o.prefix_cache = PrefixCacheMode::kOff;
    o.scheduler.block_size = 16;
    o.scheduler.max_model_len = 512;
    o.scheduler.max_batch_tokens = 256;
    o.num_threads = 2;
    return o;
  }
};

TEST_F(EngineStructuredTest, ConstrainedBatchIsValidAndDraftsChangeNothing) {
  std::vector<EngineRequest> requests = testing::Requests(model_->tokenizer());
  // Sampled requests share the batch (never speculated on).
  for (uint64_t seed : {1, 2}) {
    EngineRequest s = requests[0];
    s.sampling.temperature = 0.9f;
    s.sampling.seed = seed;
    requests.push_back(s);
  }
  auto plain = Engine::Create(*model_, Options());
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto expected = RunAll(**plain, requests);
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    ExpectValid(*expected[i], i == 3);
  }
  // The model's unconstrained greedy continuations: drafts the grammar refuses.
  std::vector<EngineRequest> free = testing::Requests(model_->tokenizer());
  for (EngineRequest& r : free) r.sampling.structured = {};
  auto unconstrained = RunAll(**plain, free);

  for (double p_wrong : {0.0, 0.3}) {
    for (bool wrong_script : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "p_wrong " << p_wrong << " unconstrained script " << wrong_script);
      auto drafter = std::make_shared<ScriptedDrafter>(
          5, p_wrong, static_cast<int32_t>(model_->config().vocab_size));
      for (size_t i = 0; i < 4; ++i) {
        drafter->Expect(requests[i].prompt,
                        wrong_script ? unconstrained[i]->tokens : expected[i]->tokens);
      }
      EngineOptions o = Options();
      o.drafter = drafter;
      o.max_draft_tokens = 5;
      auto engine = Engine::Create(*model_, o);
      ASSERT_TRUE(engine.ok());
      auto got = RunAll(**engine, requests);
      for (size_t i = 0; i < requests.size(); ++i) {
        EXPECT_EQ(got[i]->text, expected[i]->text) << "request " << i;
        EXPECT_EQ(got[i]->tokens, expected[i]->tokens) << "request " << i;
        EXPECT_EQ(got[i]->reason, expected[i]->reason) << "request " << i;
      }
      const SchedulerStats s = (*engine)->scheduler_stats();
      if (!wrong_script) {
        EXPECT_GT(s.num_accepted_draft_tokens, 0);
      }
      std::printf("p_wrong %.1f unconstrained script %d: drafted %lld accepted %lld\n", p_wrong,
                  wrong_script, static_cast<long long>(s.num_draft_tokens),
                  static_cast<long long>(s.num_accepted_draft_tokens));
    }
  }
}

TEST_F(EngineStructuredTest, BadConstraintsAreRefusedAtSubmit) {
  auto engine = Engine::Create(*model_, Options());
  ASSERT_TRUE(engine.ok());
  EngineRequest r = testing::Requests(model_->tokenizer())[0];
  r.sampling.structured.text = R"({"type":"object","if":{}})";
  Result res;
  auto id = (*engine)->Submit(r, res.Callback());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(id.status().message().find("keyword 'if' is not supported"), std::string::npos);
  EXPECT_FALSE((*engine)->CheckStructuredOutput(r.sampling.structured).ok());
  r = testing::Requests(model_->tokenizer())[0];
  r.sampling.logit_bias = {{static_cast<int32_t>(model_->config().vocab_size), 1.0f}};
  EXPECT_FALSE((*engine)->Submit(r, res.Callback()).ok());
}

// A backend whose every logits row prefers token `favourite`, then `second` (others are 0).
class PeakBackend : public ForwardBackend {
 public:
  PeakBackend(const ModelConfig& config, int32_t favourite, int32_t second)
      : config_(config), favourite_(favourite), second_(second) {}
  const ModelConfig& config() const override { return config_; }
  int64_t num_kv_blocks() const override { return 16; }
  int64_t kv_block_size() const override { return 16; }
  uint64_t kv_bytes_per_block() const override { return 0; }
  std::string description() const override { return "peak"; }
  Status Forward(const ForwardBatch& batch, float* logits) override {
    const size_t v = static_cast<size_t>(config_.vocab_size);
    for (size_t r = 0; r < batch.logits_rows.size(); ++r) {
      std::fill(logits + r * v, logits + (r + 1) * v, 0.0f);
      logits[r * v + static_cast<size_t>(second_)] = 5.0f;
      logits[r * v + static_cast<size_t>(favourite_)] = 10.0f;
    }
    return Status::Ok();
  }

 private:
  ModelConfig config_;
  int32_t favourite_, second_;
};

TEST_F(EngineStructuredTest, VerifyRejectsADraftTheGrammarRefuses) {
  const Tokenizer& tok = model_->tokenizer();
  const int32_t one = tok.TokenToId("one").value();
  const int32_t bad = tok.TokenToId("maybe").value();
  PeakBackend backend(model_->config(), bad, one);
  StepRunner runner(backend, nullptr);
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = 8;
  p.structured.kind = StructuredOutput::Kind::kGrammar;
  grammar::GrammarCompiler compiler(grammar::TokenVocab::FromTokenizer(
      tok, static_cast<int32_t>(model_->config().vocab_size), model_->eos_ids()));
  p.structured.text = "root ::= \"one\"+";
  auto g = compiler.Compile(p.structured);
  ASSERT_TRUE(g.ok());
  OutputProcessor out(p, -1, tok, model_->eos_ids(),
                      static_cast<int32_t>(model_->config().vocab_size), *g);
  // One known token, then drafts [maybe, one]: "maybe" is what the model wants and what the
  // grammar refuses, so row 0 yields "one" != draft 0 and verification stops there.
  std::vector<int32_t> blocks = {0};
  StepPlan plan;
  plan.token_ids = {one, bad, one};
  ScheduledSequence s;
  s.request_id = 1;
  s.num_tokens = 3;
  s.token_offset = 0;
  s.start_position = 5;
  s.block_table = blocks;
  s.num_draft_tokens = 2;
  s.first_logits_row = 0;
  s.num_logits_rows = 3;
  plan.sequences.push_back(s);
  plan.logits_rows = {0, 1, 2};
  auto res = runner.Run(
      plan, [](RequestId, std::span<RowSampling>) {},
      [](RequestId, std::span<const int32_t>, uint32_t*, size_t) {},
      [&](RequestId, float* logits, int32_t dev) { return out.OnToken(logits, dev, {}, {}); });
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_EQ(res->sampled.size(), 1u);  // the refused draft ended the window
  EXPECT_EQ(res->sampled[0].token_id, one);
}

}  // namespace
}  // namespace jisu
