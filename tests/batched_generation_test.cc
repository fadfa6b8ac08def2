// Integration: many greedy requests served together by the scheduler over the paged KV pool
// (continuous batching, chunked prefill, prefix cache, preemption) produce exactly the tokens
// each request produces alone through the single-sequence Generator, on the bundled model,
// with the default F16 KV cache on both sides (and once with F32).
#include <gtest/gtest.h>

#include <map>

#include "backend/cpu/cpu_backend.h"
#include "engine/step_runner.h"
#include "kv/block_pool.h"
#include "kv/prefix_cache.h"
#include "model/model.h"
#include "runner/generator.h"
#include "sampling/sampler.h"
#include "sched/scheduler.h"
#include "tests/test_util.h"

namespace jisu {
namespace {

constexpr int64_t kNewTokens = 12;

struct Config {
  const char* name;
  int32_t num_blocks;
  int64_t max_batch_tokens;
  int64_t max_chunk_tokens;
  PrefixCacheMode mode;
  KvType kv_type = kDefaultKvType;
};

class BatchedGenerationTest : public ::testing::TestWithParam<Config> {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load((testing::SourceDir() / "models" / "tiny-llama").string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value().release();
    pool_ = new ThreadPool(2);
    const Tokenizer& tok = model_->tokenizer();
    // A shared "system prompt" of several blocks, then distinct user parts.
    const std::string system =
        "You are a careful Python assistant. Answer with short, correct code and explain it. ";
    const char* users[] = {"def fib(n):",
                           "import os\nfor root, dirs, files in os.walk('.'):",
                           "class Stack:\n    def __init__(self):",
                           "# Read a CSV file and print the sum of the second column\n",
                           "x = [i * i for i in range(10)]\nprint(",
                           "def main():\n    args =",
                           "with open('data.json') as f:\n",
                           "async def fetch(session, url):"};
    for (int i = 0; i < 8; ++i) {
      std::string text = (i % 2 == 0 ? system : std::string()) + users[i];
      prompts_.push_back(tok.Encode(text, false));
    }
    shared_prefix_ = static_cast<int64_t>(tok.Encode(system, false).size());
  }
  // Each prompt's greedy tokens alone through the Generator over a cache of `kv_type`.
  static const std::vector<std::vector<int32_t>>& Expected(KvType kv_type) {
    auto& want = expected_[kv_type];
    if (!want.empty()) return want;
    GeneratorOptions options;
    options.kv_type = kv_type;
    auto gen = Generator::Create(*model_, *pool_, options);
    EXPECT_TRUE(gen.ok());
    SamplingParams greedy;
    greedy.temperature = 0;
    greedy.ignore_eos = true;
    greedy.max_tokens = kNewTokens;
    for (const auto& p : prompts_) {
      auto r = (*gen)->Generate(p, greedy);
      EXPECT_TRUE(r.ok());
      want.push_back(r.ok() ? r->output_ids : std::vector<int32_t>{});
    }
    return want;
  }
  static void TearDownTestSuite() {
    delete pool_;
    delete model_;
  }

  static Model* model_;
  static ThreadPool* pool_;
  static std::vector<std::vector<int32_t>> prompts_;
  static std::map<KvType, std::vector<std::vector<int32_t>>> expected_;
  static int64_t shared_prefix_;
};

Model* BatchedGenerationTest::model_ = nullptr;
ThreadPool* BatchedGenerationTest::pool_ = nullptr;
std::vector<std::vector<int32_t>> BatchedGenerationTest::prompts_;
std::map<KvType, std::vector<std::vector<int32_t>>> BatchedGenerationTest::expected_;
int64_t BatchedGenerationTest::shared_prefix_ = 0;

TEST_P(BatchedGenerationTest, ConcurrentGreedyEqualsOneAtATime) {
  const Config& cfg = GetParam();
  const ModelConfig& mc = model_->config();
  const int32_t block_size = 4;
  BlockPool blocks(cfg.num_blocks, block_size);
  PrefixCache cache(&blocks, cfg.mode);
  SchedulerOptions options;
  options.block_size = block_size;
  options.max_batch_tokens = cfg.max_batch_tokens;
  options.max_chunk_tokens = cfg.max_chunk_tokens;
  options.max_model_len = 128;
  ASSERT_TRUE(options.Validate().ok());
  ASSERT_TRUE(Scheduler::ValidateFor(options, blocks).ok());
  Scheduler scheduler(options, &blocks, &cache);
  const auto& expected = Expected(cfg.kv_type);
  auto backend = CpuBackend::Create(*model_, {cfg.num_blocks, block_size, 2, cfg.kv_type});
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  StepRunner runner(**backend, nullptr);  // one shared Sampler: rows sampled in turn

  // The same requests twice over; the second round arrives after the first has finished, so
  // it can reuse the first round's cached blocks.
  std::map<RequestId, size_t> prompt_of;
  SamplingParams params;
  params.temperature = 0;  // greedy: argmax, ties to the lowest id, no state
  Sampler sampler(params);
  const int32_t vocab = static_cast<int32_t>(mc.vocab_size);
  size_t finished = 0;
  int64_t steps = 0, preemptions = 0;
  for (size_t round = 0; round < 2; ++round) {
    for (size_t i = 0; i < prompts_.size(); ++i) {
      NewRequest r;
      r.request_id = static_cast<RequestId>(round * 100 + i);
      r.tenant = static_cast<TenantId>(i % 3);
      r.prompt = prompts_[i];
      r.max_tokens = kNewTokens;
      r.num_shared_prefix_tokens = i % 2 == 0 ? shared_prefix_ : 0;
      prompt_of[r.request_id] = i;
      ASSERT_TRUE(scheduler.AddRequest(std::move(r)).ok());
    }
    while (!scheduler.idle()) {
      ASSERT_LT(++steps, 10000) << "no progress";
      StepPlan plan = scheduler.Schedule();
      preemptions += static_cast<int64_t>(plan.preempted.size());
      auto out = runner.Run(
          plan, [](RequestId, std::span<RowSampling>) {},
          [](RequestId, std::span<const int32_t>, uint32_t*, size_t) {},
          [&](RequestId, float* logits, int32_t) {
            SampledToken t;
            t.token_id = sampler.Sample(logits, vocab, {}, {});
            return t;
          });
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      auto done = scheduler.ApplyStepOutput(*out);
      ASSERT_TRUE(done.ok()) << done.status().ToString();
      for (const FinishedRequest& f : *done) {
        EXPECT_EQ(f.output_tokens, expected[prompt_of[f.request_id]]) << "request " << f.request_id;
        ++finished;
      }
      ASSERT_TRUE(scheduler.CheckInvariants().ok());
    }
  }
  EXPECT_EQ(finished, 2 * prompts_.size());
  EXPECT_EQ(blocks.stats().num_in_use, 0);
  std::printf("%s: %lld steps, %lld preemptions, prefix hit rate %.2f\n", cfg.name,
              static_cast<long long>(steps), static_cast<long long>(preemptions),
              cache.stats().total.HitRate());
  if (cfg.mode != PrefixCacheMode::kOff && cfg.num_blocks >= 256) {
    EXPECT_GT(cache.stats().total.HitRate(), 0.2);  // the second round reuses the first's blocks
  }
  if (cfg.num_blocks < 64) {
    EXPECT_GT(preemptions, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Configs, BatchedGenerationTest,
    ::testing::Values(Config{"all_at_once", 512, 2048, 0, PrefixCacheMode::kOff},
                      Config{"prefix_shared", 512, 2048, 0, PrefixCacheMode::kShared},
                      Config{"prefix_full", 512, 2048, 0, PrefixCacheMode::kFull},
                      Config{"small_chunks", 512, 24, 7, PrefixCacheMode::kShared},
                      Config{"forced_preemption", 40, 64, 0, PrefixCacheMode::kFull},
                      Config{"kv_f32", 512, 24, 7, PrefixCacheMode::kShared, KvType::kF32}),
    [](const ::testing::TestParamInfo<Config>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace jisu
