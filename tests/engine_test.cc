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
    FinishReason reason = FinishReason::kNone;
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
    EXPECT_EQ(results[i].reason, FinishReason::kLength);
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
  EXPECT_EQ(c.reason, FinishReason::kCancelled);
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

// The value of one sample line `series value` of a Prometheus text exposition, or -1.
double Sample(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const size_t at = ("\n" + text).find(key);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + key.size() - 1));
}

// The loop updates gauges after the outputs of a step are delivered: wait for the state after.
// The stats are snapshots the loop refreshes after its step, a little after the callbacks;
// a loaded CI machine can take seconds, so wait generously and say so if it never happens.
void WaitIdle(Engine& e, int64_t finished) {
  for (int i = 0; i < 60000; ++i) {
    const std::string text = e.MetricsText();
    if (Sample(text, "vllm:num_requests_running") == 0 &&
        Sample(text, "jisu:requests_finished_total{finished_reason=\"length\"}") == finished &&
        e.scheduler_stats().num_running == 0 && e.scheduler_stats().num_finished >= finished) {
      return;
    }
    std::this_thread::sleep_for(1ms);
  }
  ADD_FAILURE() << "engine not idle with " << finished << " finished requests after 60 s";
}

TEST_F(EngineTest, MetricsAfterRequests) {
  EngineOptions o = Options(64);
  o.prefix_cache = PrefixCacheMode::kFull;
  auto engine = Engine::Create(*model_, o);
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const std::vector<int32_t> prompt = model_->tokenizer().Encode(
      "# Utilities for parsing configuration files and command lines, with tests.\n"
      "import os\nimport sys\n\ndef main(argv):\n    parser = make_parser(argv)\n"
      "    return run(parser.parse())\n",
      false);
  const int64_t len = static_cast<int64_t>(prompt.size());
  ASSERT_GT(len, 33);
  const int64_t hit = (len - 1) / 16 * 16;  // full blocks, leaving one token to compute
  auto run = [&](TenantId tenant) {
    Collector c;
    EngineRequest r;
    r.prompt = prompt;
    r.tenant = tenant;
    r.sampling.temperature = 0;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = 5;
    ASSERT_TRUE(e.Submit(r, c.Callback()).ok());
    ASSERT_TRUE(c.Wait());
    EXPECT_EQ(c.tokens.size(), 5u);
  };
  run(0);  // cold
  WaitIdle(e, 1);
  run(1);  // warm: tenant 1 reuses tenant 0's prompt blocks
  WaitIdle(e, 2);

  const std::string text = e.MetricsText();
  EXPECT_EQ(Sample(text, "vllm:num_requests_running"), 0) << text;
  EXPECT_EQ(Sample(text, "vllm:num_requests_waiting"), 0);
  EXPECT_EQ(Sample(text, "vllm:prompt_tokens_total"), 2 * len);
  EXPECT_EQ(Sample(text, "jisu:prompt_tokens_cached_total"), hit);
  EXPECT_EQ(Sample(text, "vllm:prefix_cache_queries_total"), 2 * len);
  EXPECT_EQ(Sample(text, "vllm:prefix_cache_hits_total"), hit);
  EXPECT_EQ(Sample(text, "jisu:tenant_prompt_tokens_total{tenant=\"0\"}"), len);
  EXPECT_EQ(Sample(text, "jisu:tenant_prompt_tokens_cached_total{tenant=\"0\"}"), 0);
  EXPECT_EQ(Sample(text, "jisu:tenant_prompt_tokens_cached_total{tenant=\"1\"}"), hit);
  EXPECT_EQ(Sample(text, "jisu:tenant_prompt_tokens_total{tenant=\"other\"}"), 0);
  EXPECT_EQ(Sample(text, "vllm:generation_tokens_total"), 10);
  EXPECT_EQ(Sample(text, "jisu:requests_finished_total{finished_reason=\"length\"}"), 2);
  EXPECT_EQ(Sample(text, "vllm:request_success_total{finished_reason=\"length\"}"), 2);
  EXPECT_EQ(Sample(text, "jisu:requests_finished_total{finished_reason=\"cancelled\"}"), 0);
  EXPECT_EQ(Sample(text, "vllm:time_to_first_token_seconds_count"), 2);
  EXPECT_EQ(Sample(text, "vllm:time_per_output_token_seconds_count"), 2);
  EXPECT_EQ(Sample(text, "vllm:e2e_request_latency_seconds_count"), 2);
  EXPECT_GT(Sample(text, "vllm:e2e_request_latency_seconds_sum"), 0);
  EXPECT_EQ(Sample(text, "vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\"}"), 2);
  EXPECT_EQ(Sample(text, "vllm:num_preemptions_total"), 0);
  const SchedulerStats ss = e.scheduler_stats();
  EXPECT_EQ(Sample(text, "jisu:engine_steps_total"), ss.num_steps);
  EXPECT_EQ(Sample(text, "jisu:step_duration_seconds_count"), ss.num_steps);
  EXPECT_EQ(Sample(text, "vllm:iteration_tokens_total_sum"), ss.total_tokens_scheduled);
  EXPECT_LE(Sample(text, "jisu:scheduler_duration_seconds_sum"),
            Sample(text, "jisu:step_duration_seconds_sum"));
  // KV state: nothing running, the cached blocks stay (full mode).
  const BlockPoolStats ps = e.pool_stats();
  EXPECT_EQ(Sample(text, "vllm:kv_cache_usage_perc"), ps.Usage());
  EXPECT_EQ(Sample(text, "vllm:gpu_cache_usage_perc"), ps.Usage());
  EXPECT_EQ(Sample(text, "jisu:kv_blocks_total"), 64);
  EXPECT_EQ(Sample(text, "jisu:kv_fragmentation_ratio"), 0);
  EXPECT_EQ(Sample(text, "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"64\"}"), 1);
  const PrefixCacheStats pc = e.prefix_stats();
  EXPECT_GT(pc.cached_blocks, 0);
  EXPECT_EQ(Sample(text, "jisu:prefix_cache_blocks"), pc.cached_blocks);
  // The hit blocks are now shared by tenants 0 and 1; the rest of the chain is tenant 0's alone
  // (tenant 1 recomputed the same tokens: duplicates, not cached again).
  EXPECT_EQ(Sample(text, "jisu:prefix_cache_multi_tenant_blocks"), hit / 16);
  EXPECT_EQ(Sample(text, "jisu:tenant_prefix_cache_blocks{tenant=\"0\"}"),
            pc.cached_blocks - hit / 16);
  EXPECT_EQ(Sample(text, "jisu:tenant_prefix_cache_blocks{tenant=\"1\"}"), 0);

  // Per-tenant report.
  const std::vector<TenantPrefixStats> tenants = e.tenant_prefix_stats();
  ASSERT_EQ(tenants.size(), 2u);
  EXPECT_EQ(tenants[0].hits.query_tokens, len);
  EXPECT_EQ(tenants[0].hits.hit_tokens, 0);
  EXPECT_EQ(tenants[1].hits.hit_tokens, hit);
  EXPECT_DOUBLE_EQ(tenants[1].hits.HitRate(), double(hit) / double(len));
  EXPECT_EQ(tenants[0].cached_blocks, pc.cached_blocks - hit / 16);
  EXPECT_EQ(tenants[1].cached_blocks, 0);
}

TEST_F(EngineTest, TenantLabelsAreCapped) {
  EngineOptions o = Options(64);
  o.max_tenant_labels = 2;
  auto engine = Engine::Create(*model_, o);
  ASSERT_TRUE(engine.ok());
  std::vector<Collector> cs(4);
  for (int t = 0; t < 4; ++t) {
    EngineRequest r;
    r.prompt = {1, 2, 3};
    r.tenant = t;
    r.sampling.temperature = 0;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = 2;
    ASSERT_TRUE((*engine)->Submit(r, cs[t].Callback()).ok());
  }
  for (auto& c : cs) ASSERT_TRUE(c.Wait());
  WaitIdle(**engine, 4);
  const std::string text = (*engine)->MetricsText();
  EXPECT_EQ(Sample(text, "jisu:tenant_prompt_tokens_total{tenant=\"0\"}"), 3);
  EXPECT_EQ(Sample(text, "jisu:tenant_prompt_tokens_total{tenant=\"1\"}"), 3);
  EXPECT_EQ(Sample(text, "jisu:tenant_prompt_tokens_total{tenant=\"other\"}"), 6);
  EXPECT_EQ(Sample(text, "jisu:tenant_prompt_tokens_total{tenant=\"2\"}"), -1);  // no series
}

TEST_F(EngineTest, CancelAndPreemptionAreCounted) {
  EngineOptions o = Options(18);  // 16 blocks for max_model_len 256: two long requests collide
  o.scheduler.max_model_len = 256;
  auto engine = Engine::Create(*model_, o);
  ASSERT_TRUE(engine.ok());
  std::vector<Collector> cs(2);
  for (int i = 0; i < 2; ++i) {
    EngineRequest r;
    r.prompt = model_->tokenizer().Encode(i ? "import os\n" : "import sys\n", false);
    r.sampling.temperature = 0;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = 200;
    ASSERT_TRUE((*engine)->Submit(r, cs[i].Callback()).ok());
  }
  for (auto& c : cs) ASSERT_TRUE(c.Wait(300s));
  WaitIdle(**engine, 2);
  const std::string text = (*engine)->MetricsText();
  const int64_t preemptions = (*engine)->scheduler_stats().num_preemptions;
  EXPECT_GT(preemptions, 0);
  EXPECT_EQ(Sample(text, "vllm:num_preemptions_total"), preemptions);
  EXPECT_EQ(Sample(text, "vllm:generation_tokens_total"), 400);

  Collector c;
  EngineRequest r;
  r.prompt = {1, 2, 3};
  r.sampling.max_tokens = 200;
  r.sampling.ignore_eos = true;
  auto id = (*engine)->Submit(r, c.Callback());
  ASSERT_TRUE(id.ok());
  (*engine)->Cancel(*id);
  ASSERT_TRUE(c.Wait());
  for (int i = 0; i < 2000; ++i) {
    if (Sample((*engine)->MetricsText(),
               "jisu:requests_finished_total{finished_reason=\"cancelled\"}") == 1) {
      break;
    }
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(Sample((*engine)->MetricsText(),
                   "jisu:requests_finished_total{finished_reason=\"cancelled\"}"),
            1);
}

// --batch-window-ms: requests submitted while the idle engine waits are admitted in one step.
TEST_F(EngineTest, BatchWindowGathersArrivalsIntoTheFirstStep) {
  EngineOptions o = Options(64);
  o.batch_window_ms = 1000;
  auto engine = Engine::Create(*model_, o);
  ASSERT_TRUE(engine.ok());
  constexpr int kRequests = 4;
  std::vector<Collector> cs(kRequests);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kRequests; ++i) {
    EngineRequest r;
    r.prompt = {1, 2, 3, static_cast<int32_t>(10 + i)};
    r.sampling.temperature = 0;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = 1;
    ASSERT_TRUE((*engine)->Submit(r, cs[i].Callback()).ok());
    std::this_thread::sleep_for(20ms);  // arrivals spread over the window
  }
  if (std::chrono::steady_clock::now() - t0 > 900ms) {
    GTEST_SKIP() << "submissions took longer than the window (machine overloaded)";
  }
  for (auto& c : cs) ASSERT_TRUE(c.Wait());
  WaitIdle(**engine, kRequests);
  EXPECT_EQ((*engine)->scheduler_stats().num_steps, 1);
  const std::string text = (*engine)->MetricsText();
  EXPECT_EQ(Sample(text, "jisu:iteration_sequences_count"), 1);
  EXPECT_EQ(Sample(text, "jisu:iteration_sequences_sum"), kRequests);
}

TEST_F(EngineTest, NoBatchWindowStartsAtOnce) {
  auto engine = Engine::Create(*model_, Options(64));
  ASSERT_TRUE(engine.ok());
  std::vector<Collector> cs(2);
  for (int i = 0; i < 2; ++i) {
    EngineRequest r;
    r.prompt = {1, 2, 3, static_cast<int32_t>(10 + i)};
    r.sampling.max_tokens = 1;
    r.sampling.ignore_eos = true;
    ASSERT_TRUE((*engine)->Submit(r, cs[i].Callback()).ok());
    ASSERT_TRUE(cs[i].Wait());  // the first finishes before the second is submitted
  }
  WaitIdle(**engine, 2);
  EXPECT_EQ((*engine)->scheduler_stats().num_steps, 2);
}

TEST(EngineOptionsTest, ValidatesNewFields) {
  EngineOptions o;
  o.batch_window_ms = -1;
  EXPECT_FALSE(o.Validate().ok());
  o.batch_window_ms = 5;
  o.max_tenant_labels = -1;
  EXPECT_FALSE(o.Validate().ok());
  o.max_tenant_labels = 4;
  EXPECT_TRUE(o.Validate().ok());
}

}  // namespace
}  // namespace jisu
