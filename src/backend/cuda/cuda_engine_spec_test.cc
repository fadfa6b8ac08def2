// Multi-token steps on the GPU: a scripted drafter proposes each request's plain greedy
// continuation with random corruptions; the drafted run must stream exactly the plain run's
// tokens (both on the GPU: verification rows run as a short prefill tile through the same
// CUDA graphs and device sampling), and the KV pool ends where it started. Skips without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "backend/cuda/cuda_backend.h"
#include "engine/engine.h"
#include "tests/test_util.h"

namespace jisu {
namespace {

using namespace std::chrono_literals;

class ScriptDrafter : public Drafter {
 public:
  ScriptDrafter(double p_wrong, int32_t vocab) : rng_(5), p_wrong_(p_wrong), vocab_(vocab) {}
  void Expect(const std::vector<int32_t>& prompt, const std::vector<int32_t>& continuation) {
    script_.emplace_back(prompt, continuation);
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
      const int64_t k = std::uniform_int_distribution<int64_t>(1, max_tokens)(rng_);
      for (int64_t i = 0; i < k && done + i < cont.size(); ++i) {
        int32_t t = cont[done + i];
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

std::unique_ptr<ForwardBackend> Gpu(const Model& model) {
  CudaBackendOptions o;
  o.block_size = 16;
  o.kv_bytes = 1ull << 30;
  o.max_kv_blocks = 128;
  auto b = CreateCudaBackend(model, o);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? std::move(b).value() : nullptr;
}

std::vector<std::vector<int32_t>> RunRequests(Engine& engine,
                                              const std::vector<std::vector<int32_t>>& prompts,
                                              const SamplingParams& sampling) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<int32_t>> got(prompts.size());
  size_t finished = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EngineRequest r;
    r.prompt = prompts[i];
    r.sampling = sampling;
    auto id = engine.Submit(r, [&, i](const EngineOutput& o) {
      std::lock_guard<std::mutex> lock(mu);
      got[i].insert(got[i].end(), o.token_ids.begin(), o.token_ids.end());
      if (o.finished) {
        ++finished;
        cv.notify_all();
      }
    });
    EXPECT_TRUE(id.ok()) << id.status().ToString();
  }
  std::unique_lock<std::mutex> lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, 120s, [&] { return finished == prompts.size(); }));
  return got;
}

TEST(CudaEngineSpecTest, GreedyOutputIsUnchangedByDrafts) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  auto m = Model::Load((testing::SourceDir() / "models" / "tiny-llama").string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Model& model = **m;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 6; ++i) {
    prompts.push_back(model.tokenizer().Encode(
        "# Helpers for parsing files.\ndef parse_" + std::to_string(i) + "(path", false));
  }
  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.ignore_eos = true;
  greedy.max_tokens = 24;
  EngineOptions options;
  options.scheduler.block_size = 16;
  options.scheduler.max_model_len = 512;
  options.defaults.sampling = SamplingPlacement::kAuto;
  auto plain = Engine::Create(model, options, Gpu(model));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  const auto expected = RunRequests(**plain, prompts, greedy);

  for (double p_wrong : {0.0, 0.3}) {
    SCOPED_TRACE(::testing::Message() << "p_wrong " << p_wrong);
    auto drafter =
        std::make_shared<ScriptDrafter>(p_wrong, static_cast<int32_t>(model.config().vocab_size));
    for (size_t i = 0; i < prompts.size(); ++i) drafter->Expect(prompts[i], expected[i]);
    EngineOptions o = options;
    o.drafter = drafter;
    o.max_draft_tokens = 5;
    auto engine = Engine::Create(model, o, Gpu(model));
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    const BlockPoolStats start = (*engine)->pool_stats();
    const auto got = RunRequests(**engine, prompts, greedy);
    for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "request " << i;
    for (int i = 0; i < 5000 && (*engine)->pool_stats().num_in_use != start.num_in_use; ++i) {
      std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ((*engine)->pool_stats().num_in_use, start.num_in_use);
    const SchedulerStats s = (*engine)->scheduler_stats();
    EXPECT_GT(s.num_draft_tokens, 0);
    std::printf("p_wrong %.1f: drafted %lld, accepted %lld\n", p_wrong,
                static_cast<long long>(s.num_draft_tokens),
                static_cast<long long>(s.num_accepted_draft_tokens));
  }
}

}  // namespace
}  // namespace jisu
