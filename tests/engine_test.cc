// The engine end to end on the bundled model: concurrent clients on several threads get, for
// every greedy request, exactly the tokens and text of a one-at-a-time run; cancellation frees
// KV blocks at once; overload and bad requests are refused cleanly.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "runner/generator.h"
#include "tests/test_util.h"

namespace jisu {
namespace {

using namespace std::chrono_literals;

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load((testing::SourceDir() / "models" / "tiny-llama").string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value().release();
  }
  static void TearDownTestSuite() { delete model_; }

  static EngineOptions Options(int64_t blocks) {
    EngineOptions o;
    o.kv_blocks = blocks;
    o.scheduler.block_size = 16;
    o.scheduler.max_model_len = 512;
    o.scheduler.max_batch_tokens = 256;
    o.num_threads = 2;
    return o;
  }

  // Collects one request's outputs; Wait() blocks until it finished.
  struct Collector {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<int32_t> tokens;
    std::string text;
    std::string reason;
    int64_t cached = 0;
    bool done = false;
    OutputCallback Callback() {
      return [this](const EngineOutput& o) {
        std::lock_guard<std::mutex> lock(mu);
        tokens.insert(tokens.end(), o.token_ids.begin(), o.token_ids.end());
        text += o.text;
        cached = o.num_cached_prompt_tokens;
        if (o.finished) {
          done = true;
          reason = o.finish_reason;
          cv.notify_all();
        }
      };
    }
    bool Wait(std::chrono::seconds limit = 120s) {
      std::unique_lock<std::mutex> lock(mu);
      return cv.wait_for(lock, limit, [&] { return done; });
    }
  };

  static Model* model_;
};

Model* EngineTest::model_ = nullptr;

TEST_F(EngineTest, ConcurrentClientsGetOneAtATimeResults) {
  const Tokenizer& tok = model_->tokenizer();
  const std::string system = "# Utilities for parsing configuration files and command lines.\n";
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 16; ++i) {
    prompts.push_back(tok.Encode(system + "def helper_" + std::to_string(i) + "(value", false));
  }
  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.ignore_eos = true;
  greedy.max_tokens = 10;
  ThreadPool pool(2);
  auto gen = Generator::Create(*model_, pool);
  ASSERT_TRUE(gen.ok());
  std::vector<GenerationResult> expected;
  for (const auto& p : prompts) expected.push_back(*(*gen)->Generate(p, greedy));

  auto engine = Engine::Create(*model_, Options(256));
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  std::vector<Collector> results(prompts.size());
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (size_t i = c; i < prompts.size(); i += 4) {
        EngineRequest r;
        r.prompt = prompts[i];
        r.sampling = greedy;
        r.tenant = c;
        auto id = (*engine)->Submit(r, results[i].Callback());
        EXPECT_TRUE(id.ok()) << id.status().ToString();
      }
    });
  }
  for (auto& t : clients) t.join();
  int64_t cached = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(results[i].Wait()) << "request " << i << " did not finish";
    EXPECT_EQ(results[i].tokens, expected[i].output_ids) << i;
    EXPECT_EQ(results[i].text, expected[i].text) << i;
    EXPECT_EQ(results[i].reason, "length");
    cached += results[i].cached;
  }
  std::printf("prompt tokens served from the prefix cache: %lld\n", static_cast<long long>(cached));
}

TEST_F(EngineTest, CancelFreesBlocksAtOnce) {
  auto engine = Engine::Create(*model_, Options(64));
  ASSERT_TRUE(engine.ok());
  Collector c;
  EngineRequest r;
  r.prompt = model_->tokenizer().Encode("import sys\n", false);
  r.sampling.temperature = 0;
  r.sampling.ignore_eos = true;
  r.sampling.max_tokens = 400;
  auto id = (*engine)->Submit(r, c.Callback());
  ASSERT_TRUE(id.ok());
  for (int i = 0; i < 2000 && (*engine)->pool_stats().num_in_use == 0; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_GT((*engine)->pool_stats().num_in_use, 0);
  (*engine)->Cancel(*id);
  ASSERT_TRUE(c.Wait());
  EXPECT_EQ(c.reason, "cancelled");
  EXPECT_LT(c.tokens.size(), 400u);
  for (int i = 0; i < 2000 && (*engine)->pool_stats().num_in_use != 0; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ((*engine)->pool_stats().num_in_use, 0);
}

TEST_F(EngineTest, RefusesBadRequestsAndOverload) {
  EngineOptions o = Options(64);
  o.scheduler.max_queue = 2;
  auto engine = Engine::Create(*model_, o);
  ASSERT_TRUE(engine.ok());
  EngineRequest r;
  r.sampling.temperature = 0;
  EXPECT_EQ((*engine)->Submit(r, [](const EngineOutput&) {}).status().code(),
            Status::Code::kInvalidArgument);  // empty prompt
  r.prompt.assign(600, 5);
  EXPECT_EQ((*engine)->Submit(r, [](const EngineOutput&) {}).status().code(),
            Status::Code::kOutOfRange);
  r.prompt.assign(4, 5);
  r.sampling.temperature = -1;
  EXPECT_EQ((*engine)->Submit(r, [](const EngineOutput&) {}).status().code(),
            Status::Code::kInvalidArgument);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = 50;
  int refused = 0;
  std::vector<Collector> cs(50);
  for (auto& c : cs) {
    auto id = (*engine)->Submit(r, c.Callback());
    if (!id.ok()) {
      EXPECT_EQ(id.status().code(), Status::Code::kResourceExhausted);
      c.done = true;
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
  for (auto& c : cs) ASSERT_TRUE(c.Wait());
}

}  // namespace
}  // namespace jisu
