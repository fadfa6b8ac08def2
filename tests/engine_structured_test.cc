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
#include "tests/test_util.h"

namespace jisu {
namespace {

using namespace std::chrono_literals;

const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 10},
    "count": {"type": "integer", "minimum": 0, "maximum": 99},
    "kind": {"enum": ["a", "b"]},
    "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}
  },
  "required": ["name", "count", "kind", "tags"],
  "additionalProperties": false
})";

struct Result {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int32_t> tokens;
  std::string text;
  FinishReason reason = FinishReason::kNone;
  Status error;
  bool done = false;
  OutputCallback Callback() {
    return [this](const EngineOutput& o) {
      std::lock_guard<std::mutex> lock(mu);
      tokens.insert(tokens.end(), o.token_ids.begin(), o.token_ids.end());
      text += o.text;
      if (o.finished) {
        done = true;
        reason = o.finish_reason;
        error = o.error;
        cv.notify_all();
      }
    };
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 300s, [&] { return done; });
  }
};

// Proposes, for each known prompt, its next tokens from a script with random corruptions.
class ScriptedDrafter : public Drafter {
 public:
  ScriptedDrafter(uint32_t seed, double p_wrong, int32_t vocab)
      : rng_(seed), p_wrong_(p_wrong), vocab_(vocab) {}
  void Expect(std::vector<int32_t> prompt, std::vector<int32_t> continuation) {
    script_.push_back({std::move(prompt), std::move(continuation)});
  }
  void Propose(int64_t, std::span<const int32_t> tokens, int64_t max_tokens,
               std::vector<int32_t>* drafts) override {
    drafts->clear();
    for (const auto& [prompt, cont] : script_) {
      if (tokens.size() < prompt.size() ||
          !std::equal(prompt.begin(), prompt.end(), tokens.begin())) {
        continue;
      }
      const size_t done = tokens.size() - prompt.size();
      for (int64_t i = 0; i < max_tokens; ++i) {
        const size_t at = done + static_cast<size_t>(i);
        int32_t t = at < cont.size() ? cont[at] : 0;
        if (std::bernoulli_distribution(p_wrong_)(rng_)) {
          t = std::uniform_int_distribution<int32_t>(0, vocab_ - 1)(rng_);
        }
        drafts->push_back(t);
      }
      return;
    }
  }

 private:
  std::mt19937 rng_;
  double p_wrong_;
  int32_t vocab_;
  std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> script_;
};

class EngineStructuredTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load((testing::SourceDir() / "models" / "tiny-llama").string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value().release();
  }
  static void TearDownTestSuite() { delete model_; }

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

  static std::vector<EngineRequest> Requests() {
    const Tokenizer& tok = model_->tokenizer();
    std::vector<EngineRequest> rs;
    const char* prompts[] = {"config = ", "def f():\n    return ", "x = {", "data = "};
    for (int i = 0; i < 4; ++i) {
      EngineRequest r;
      r.prompt = tok.Encode(prompts[i], false);
      r.sampling.temperature = 0;
      r.sampling.max_tokens = 200;
      r.sampling.structured.kind = StructuredOutput::Kind::kJsonSchema;
      r.sampling.structured.text = kSchema;
      rs.push_back(r);
    }
    rs[3].sampling.structured.kind = StructuredOutput::Kind::kRegex;
    rs[3].sampling.structured.text = "(0|[1-9][0-9]{0,3})( [+*] (0|[1-9][0-9]{0,3})){2}";
    return rs;
  }

  static std::vector<std::unique_ptr<Result>> Run(Engine& e, const std::vector<EngineRequest>& rs) {
    std::vector<std::unique_ptr<Result>> out;
    for (const EngineRequest& r : rs) {
      out.push_back(std::make_unique<Result>());
      auto id = e.Submit(r, out.back()->Callback());
      EXPECT_TRUE(id.ok()) << id.status().ToString();
    }
    for (auto& r : out) EXPECT_TRUE(r->Wait());
    return out;
  }

  static void ExpectValid(const Result& r, bool regex) {
    EXPECT_EQ(r.reason, FinishReason::kStop) << r.text << " " << r.error.message();
    if (regex) {
      EXPECT_TRUE(
          std::regex_match(r.text, std::regex("(0|[1-9][0-9]{0,3})( [+*] (0|[1-9][0-9]{0,3})){2}")))
          << r.text;
      return;
    }
    const nlohmann::json j = nlohmann::json::parse(r.text, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << r.text;
    EXPECT_EQ(j.size(), 4u) << r.text;
    ASSERT_TRUE(j.contains("name") && j["name"].is_string()) << r.text;
    EXPECT_LE(j["name"].get<std::string>().size(), 10u * 4) << r.text;  // <= 10 characters
    ASSERT_TRUE(j.contains("count") && j["count"].is_number_integer()) << r.text;
    EXPECT_GE(j["count"].get<int>(), 0);
    EXPECT_LE(j["count"].get<int>(), 99);
    ASSERT_TRUE(j.contains("kind")) << r.text;
    EXPECT_TRUE(j["kind"] == "a" || j["kind"] == "b") << r.text;
    ASSERT_TRUE(j.contains("tags") && j["tags"].is_array()) << r.text;
    EXPECT_LE(j["tags"].size(), 2u);
    for (const auto& t : j["tags"]) EXPECT_TRUE(t.is_boolean());
  }

  static Model* model_;
};

Model* EngineStructuredTest::model_ = nullptr;

TEST_F(EngineStructuredTest, ConstrainedBatchIsValidAndDraftsChangeNothing) {
  std::vector<EngineRequest> requests = Requests();
  // Sampled requests share the batch (never speculated on).
  for (uint64_t seed : {1, 2}) {
    EngineRequest s = requests[0];
    s.sampling.temperature = 0.9f;
    s.sampling.seed = seed;
    requests.push_back(s);
  }
  auto plain = Engine::Create(*model_, Options());
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto expected = Run(**plain, requests);
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    ExpectValid(*expected[i], i == 3);
  }
  // The model's unconstrained greedy continuations: drafts the grammar refuses.
  std::vector<EngineRequest> free = Requests();
  for (EngineRequest& r : free) r.sampling.structured = {};
  auto unconstrained = Run(**plain, free);

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
      auto got = Run(**engine, requests);
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
  EngineRequest r = Requests()[0];
  r.sampling.structured.text = R"({"type":"object","if":{}})";
  Result res;
  auto id = (*engine)->Submit(r, res.Callback());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(id.status().message().find("keyword 'if' is not supported"), std::string::npos);
  EXPECT_FALSE((*engine)->CheckStructuredOutput(r.sampling.structured).ok());
  r = Requests()[0];
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
      plan, [](RequestId, RowSampling*) {},
      [&](RequestId, float* logits, int32_t dev) { return out.OnToken(logits, dev, {}, {}); });
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_EQ(res->sampled.size(), 1u);  // the refused draft ended the window
  EXPECT_EQ(res->sampled[0].token_id, one);
}

}  // namespace
}  // namespace jisu
