// Multi-token steps end to end on the bundled model: a scripted drafter proposes the true greedy
// continuation with random corruptions; every greedy request must stream exactly what it
// streams without a drafter (tokens, text, stop strings, logprobs), requests that sample are
// never speculated on, and the KV pool ends where it started.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "engine/engine.h"
#include "tests/test_util.h"

namespace jisu {
namespace {

using namespace std::chrono_literals;

// Knows each prompt's expected continuation; proposes its next 1..max tokens, each replaced by
// a random id with probability p_wrong. Called on the engine loop thread only.
class ScriptedDrafter : public Drafter {
 public:
  ScriptedDrafter(uint32_t seed, double p_wrong, int32_t vocab)
      : rng_(seed), p_wrong_(p_wrong), vocab_(vocab) {}

  void Expect(std::vector<int32_t> prompt, std::vector<int32_t> continuation) {
    script_.push_back({std::move(prompt), std::move(continuation)});
  }

  void Propose(int64_t request_id, std::span<const int32_t> tokens, int64_t max_tokens,
               std::vector<int32_t>* drafts) override {
    drafts->clear();
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_[request_id];
    for (const auto& [prompt, cont] : script_) {
      if (tokens.size() < prompt.size() ||
          !std::equal(prompt.begin(), prompt.end(), tokens.begin())) {
        continue;
      }
      const size_t done = tokens.size() - prompt.size();
      if (done > cont.size() ||
          !std::equal(tokens.begin() + prompt.size(), tokens.end(), cont.begin())) {
        ++off_script_;  // the request diverged from its plain run
        return;
      }
      const int64_t k = std::uniform_int_distribution<int64_t>(1, max_tokens)(rng_);
      for (int64_t i = 0; i < k; ++i) {
        const size_t at = done + static_cast<size_t>(i);
        int32_t t = at < cont.size() ? cont[at] : 0;
        if (std::bernoulli_distribution(p_wrong_)(rng_)) {
          t = std::uniform_int_distribution<int32_t>(0, vocab_ - 1)(rng_);
        }
        drafts->push_back(t);
      }
      if (std::bernoulli_distribution(0.1)(rng_)) drafts->push_back(-5);  // ignored by the engine
      return;
    }
    if (fallback_ >= 0) drafts->assign(static_cast<size_t>(max_tokens), fallback_);
  }

  // Unscripted prompts get max_tokens copies of `token` (mostly rejected).
  void SetFallback(int32_t token) { fallback_ = token; }

  void Forget(int64_t request_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++forgotten_[request_id];
  }

  int64_t calls(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_[id];
  }
  int64_t forgotten(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    return forgotten_[id];
  }
  int64_t off_script() {
    std::lock_guard<std::mutex> lock(mu_);
    return off_script_;
  }

 private:
  std::mutex mu_;
  std::mt19937 rng_;
  double p_wrong_;
  int32_t vocab_;
  std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> script_;
  std::map<int64_t, int64_t> calls_, forgotten_;
  int64_t off_script_ = 0;
  int32_t fallback_ = -1;
};

struct Result {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int32_t> tokens;
  std::string text;
  FinishReason reason = FinishReason::kNone;
  std::vector<SampledLogprobs> logprobs;
  int64_t outputs = 0;
  bool done = false;
  OutputCallback Callback() {
    return [this](const EngineOutput& o) {
      std::lock_guard<std::mutex> lock(mu);
      tokens.insert(tokens.end(), o.token_ids.begin(), o.token_ids.end());
      text += o.text;
      logprobs.insert(logprobs.end(), o.logprobs.begin(), o.logprobs.end());
      ++outputs;
      if (o.finished) {
        done = true;
        reason = o.finish_reason;
        cv.notify_all();
      }
    };
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 300s, [&] { return done; });
  }
};

class EngineSpecTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load((testing::SourceDir() / "models" / "tiny-llama").string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value().release();
  }
  static void TearDownTestSuite() { delete model_; }

  static EngineOptions Options(int64_t blocks, PrefixCacheMode mode) {
    EngineOptions o;
    o.kv_blocks = blocks;
    o.prefix_cache = mode;
    o.scheduler.block_size = 16;
    o.scheduler.max_model_len = 256;
    o.scheduler.max_batch_tokens = 256;
    o.num_threads = 2;
    return o;
  }

  static std::vector<EngineRequest> Requests() {
    const Tokenizer& tok = model_->tokenizer();
    std::vector<EngineRequest> rs;
    const char* texts[] = {"def parse_args(argv):\n",
                           "import os\nimport sys\n\n",
                           "class Config:\n    def __init__(self",
                           "for i in range(10):\n",
                           "# Utilities for files\ndef read_file(path",
                           "x = [1, 2, 3]\n"};
    for (int i = 0; i < 6; ++i) {
      EngineRequest r;
      r.prompt = tok.Encode(texts[i], false);
      r.sampling.temperature = 0;
      r.sampling.ignore_eos = true;
      r.sampling.max_tokens = 20 + 7 * i;
      r.tenant = i % 2;
      rs.push_back(r);
    }
    rs[2].top_logprobs = 2;
    // Penalties must see the tokens accepted earlier in the same window (this prompt's plain
    // continuation repeats itself).
    rs[1].sampling.frequency_penalty = 1.0f;
    rs[4].sampling.repetition_penalty = 1.3f;
    return rs;
  }

  // Runs `requests` concurrently; returns results in order.
  static std::vector<std::unique_ptr<Result>> Run(Engine& e,
                                                  const std::vector<EngineRequest>& requests,
                                                  std::vector<RequestId>* ids = nullptr) {
    std::vector<std::unique_ptr<Result>> out;
    for (const EngineRequest& r : requests) {
      out.push_back(std::make_unique<Result>());
      auto id = e.Submit(r, out.back()->Callback());
      EXPECT_TRUE(id.ok()) << id.status().ToString();
      if (ids && id.ok()) ids->push_back(*id);
    }
    for (auto& r : out) EXPECT_TRUE(r->Wait());
    return out;
  }

  static void WaitPoolIdle(Engine& e) {
    for (int i = 0; i < 5000; ++i) {
      if (e.scheduler_stats().num_running == 0 && e.pool_stats().num_in_use == 0) return;
      std::this_thread::sleep_for(1ms);
    }
  }

  static Model* model_;
};

Model* EngineSpecTest::model_ = nullptr;

TEST_F(EngineSpecTest, GreedyOutputIsUnchangedByDrafts) {
  std::vector<EngineRequest> requests = Requests();
  // Baseline without a drafter.
  auto plain = Engine::Create(*model_, Options(128, PrefixCacheMode::kOff));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  auto expected = Run(**plain, requests);
  // A stop string taken from the middle of one baseline text: the drafted run must stop at the
  // same place, inside a window.
  const std::string& t3 = expected[3]->text;
  ASSERT_GT(t3.size(), 12u);
  requests[3].sampling.stop = {t3.substr(t3.size() / 2, 3)};
  expected[3] = std::move(Run(**plain, {requests[3]})[0]);
  ASSERT_EQ(expected[3]->reason, FinishReason::kStop);
  // One sampled request: never speculated on.
  EngineRequest sampled = requests[0];
  sampled.sampling.temperature = 0.8f;
  sampled.sampling.seed = 7;

  for (PrefixCacheMode mode : {PrefixCacheMode::kOff, PrefixCacheMode::kFull}) {
    for (double p_wrong : {0.0, 0.3}) {
      SCOPED_TRACE(::testing::Message()
                   << "mode " << static_cast<int>(mode) << " p_wrong " << p_wrong);
      auto drafter = std::make_shared<ScriptedDrafter>(
          11, p_wrong, static_cast<int32_t>(model_->config().vocab_size));
      for (size_t i = 0; i < requests.size(); ++i) {
        drafter->Expect(requests[i].prompt, expected[i]->tokens);
      }
      EngineOptions o = Options(128, mode);
      o.drafter = drafter;
      o.max_draft_tokens = 6;
      auto engine = Engine::Create(*model_, o);
      ASSERT_TRUE(engine.ok()) << engine.status().ToString();
      std::vector<EngineRequest> all = requests;
      all.push_back(sampled);
      std::vector<RequestId> ids;
      auto got = Run(**engine, all, &ids);
      ASSERT_EQ(ids.size(), all.size());
      int64_t outputs = 0, tokens = 0;
      for (size_t i = 0; i < requests.size(); ++i) {
        EXPECT_EQ(got[i]->tokens, expected[i]->tokens) << "request " << i;
        EXPECT_EQ(got[i]->text, expected[i]->text) << "request " << i;
        EXPECT_EQ(got[i]->reason, expected[i]->reason) << "request " << i;
        ASSERT_EQ(got[i]->logprobs.size(), expected[i]->logprobs.size()) << "request " << i;
        for (size_t j = 0; j < got[i]->logprobs.size(); ++j) {
          EXPECT_EQ(got[i]->logprobs[j].token_id, expected[i]->logprobs[j].token_id);
          EXPECT_NEAR(got[i]->logprobs[j].logprob, expected[i]->logprobs[j].logprob, 1e-3);
          EXPECT_EQ(got[i]->logprobs[j].top.size(), 2u);
        }
        EXPECT_GT(drafter->calls(ids[i]), 0) << "request " << i;
        outputs += got[i]->outputs;
        tokens += static_cast<int64_t>(got[i]->tokens.size());
      }
      EXPECT_EQ(drafter->calls(ids.back()), 0);  // temperature 0.8: no drafts
      EXPECT_EQ(got.back()->tokens.size(), static_cast<size_t>(sampled.sampling.max_tokens));
      EXPECT_EQ(drafter->off_script(), 0);
      WaitPoolIdle(**engine);  // also: the loop is past the step that finished the last request
      for (size_t i = 0; i < requests.size(); ++i) {
        EXPECT_EQ(drafter->forgotten(ids[i]), 1) << "request " << i;
      }
      const SchedulerStats s = (*engine)->scheduler_stats();
      const BlockPoolStats end = (*engine)->pool_stats();
      std::printf(
          "mode %d p_wrong %.1f: drafted %lld accepted %lld, %lld outputs for %lld tokens\n",
          static_cast<int>(mode), p_wrong, static_cast<long long>(s.num_draft_tokens),
          static_cast<long long>(s.num_accepted_draft_tokens), static_cast<long long>(outputs),
          static_cast<long long>(tokens));
      EXPECT_GT(s.num_accepted_draft_tokens, 0);
      EXPECT_LT(outputs, tokens);  // several tokens per step
      if (p_wrong > 0) {
        EXPECT_LT(s.num_accepted_draft_tokens, s.num_draft_tokens);
      }
      EXPECT_EQ(end.num_in_use, 0);
      if (mode == PrefixCacheMode::kOff) {
        EXPECT_EQ(end.num_free, 128);  // where it started
      } else {
        EXPECT_EQ(end.num_free + end.num_evictable, 128);
      }
    }
  }
}

TEST_F(EngineSpecTest, CancelWithDraftsPendingFreesEverything) {
  auto drafter =
      std::make_shared<ScriptedDrafter>(3, 0.0, static_cast<int32_t>(model_->config().vocab_size));
  EngineRequest r = Requests()[1];
  r.sampling.max_tokens = 200;
  drafter->SetFallback(42);
  EngineOptions o = Options(64, PrefixCacheMode::kOff);
  o.drafter = drafter;
  auto engine = Engine::Create(*model_, o);
  ASSERT_TRUE(engine.ok());
  Result res;
  auto id = (*engine)->Submit(r, res.Callback());
  ASSERT_TRUE(id.ok());
  for (int i = 0; i < 5000 && (*engine)->scheduler_stats().num_draft_tokens == 0; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  (*engine)->Cancel(*id);
  ASSERT_TRUE(res.Wait());
  EXPECT_EQ(res.reason, FinishReason::kCancelled);
  WaitPoolIdle(**engine);
  EXPECT_EQ((*engine)->pool_stats().num_free, 64);
  EXPECT_EQ(drafter->forgotten(*id), 1);
}

TEST(EngineSpecOptions, MaxDraftTokensIsBounded) {
  EngineOptions o;
  o.max_draft_tokens = -1;
  EXPECT_FALSE(o.Validate().ok());
  o.max_draft_tokens = 65;
  EXPECT_FALSE(o.Validate().ok());
  o.max_draft_tokens = 8;
  EXPECT_TRUE(o.Validate().ok());
}

}  // namespace
}  // namespace jisu
