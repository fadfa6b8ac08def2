// Structured output on the GPU, through the engine: a continuous batch mixing JSON-schema and
// regex requests with free ones (one with logit_bias) and a constrained one with logit_bias.
// Constrained rows are drawn on the device under the grammar's mask (filled on the host during
// the forward pass); greedy output must equal the host path's on the same GPU (every row's
// logits downloaded and masked on the host: SamplingPlacement::kHost) step for step, without
// and with speculative decoding (verification rows masked at each draft position), and seeded
// sampled requests must stay valid. Skips without a GPU.
//
// Why drafts are compared with drafts: the GPU's logits depend on the step's shape (a token's
// products run on the GEMV, skinny or cuBLAS kernel and its attention on the prefill or decode
// kernel, with BF16 activations in between; cuda_backend_test.cc's kBatchToleranceFastPaths),
// so a verification row and the decode row of the same token can differ by ~1e-2, and a near
// tie between two allowed tokens can go either way (seen on an H100, 2026-12-06: "count": 1
// without drafts, 0 with them, on the host path too). Each run admits the whole batch at once
// (batch window), so host and device runs take the same steps, with the same drafts.
#include <gtest/gtest.h>

#include "backend/cuda/cuda_backend.h"
#include "engine/engine.h"
#include "tests/structured_test_util.h"
#include "tests/test_util.h"

namespace jisu {
namespace {

using testing::ExpectValid;
using testing::Result;
using testing::RunAll;
using testing::ScriptedDrafter;

class CudaEngineGrammarTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
    if (!model_) {
      auto m = Model::Load((testing::SourceDir() / "models" / "tiny-llama").string());
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      model_ = std::move(m).value().release();
    }
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  // Admits `batch` requests together (they are all submitted within the window).
  static std::unique_ptr<Engine> Make(SamplingPlacement placement, int64_t batch,
                                      std::shared_ptr<Drafter> drafter = nullptr) {
    CudaBackendOptions b;
    b.block_size = 16;
    b.kv_bytes = 1ull << 30;
    b.max_kv_blocks = 128;
    auto backend = CreateCudaBackend(*model_, b);
    EXPECT_TRUE(backend.ok()) << backend.status().ToString();
    if (!backend.ok()) return nullptr;
    EngineOptions o;
    o.prefix_cache = PrefixCacheMode::kOff;
    o.scheduler.block_size = 16;
    o.scheduler.max_model_len = 512;
    o.scheduler.max_batch_tokens = 256;
    o.scheduler.max_seqs = batch;
    o.batch_window_ms = 5000;
    o.defaults.sampling = placement;
    o.drafter = std::move(drafter);
    o.max_draft_tokens = 5;
    auto e = Engine::Create(*model_, o, std::move(backend).value());
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(e).value() : nullptr;
  }

  // Constrained (3 schema, 1 regex), free (one with logit_bias), constrained with logit_bias.
  static std::vector<EngineRequest> MixedRequests() {
    const Tokenizer& tok = model_->tokenizer();
    std::vector<EngineRequest> rs = testing::Requests(tok);
    for (int i = 0; i < 3; ++i) {
      EngineRequest r = rs[static_cast<size_t>(i)];
      r.sampling.structured = {};
      r.sampling.max_tokens = 24;
      r.sampling.ignore_eos = true;
      if (i == 2) r.sampling.logit_bias = {{tok.Encode("one", false)[0], 6.0f}};
      rs.push_back(r);
    }
    EngineRequest biased = rs[0];
    biased.sampling.logit_bias = {{tok.Encode("true", false)[0], 8.0f}};
    rs.push_back(biased);
    return rs;
  }

  static Model* model_;
};

Model* CudaEngineGrammarTest::model_ = nullptr;

void ExpectSame(const std::vector<std::unique_ptr<Result>>& got,
                const std::vector<std::unique_ptr<Result>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i]->tokens, want[i]->tokens)
        << "request " << i << ": " << got[i]->text << " vs " << want[i]->text;
    EXPECT_EQ(got[i]->reason, want[i]->reason) << "request " << i;
  }
}

TEST_F(CudaEngineGrammarTest, DeviceMaskedBatchEqualsHostMasking) {
  const std::vector<EngineRequest> requests = MixedRequests();
  const int64_t n = static_cast<int64_t>(requests.size());
  auto host = Make(SamplingPlacement::kHost, n);
  ASSERT_TRUE(host);
  const auto expected = RunAll(*host, requests);
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    ExpectValid(*expected[i], i == 3);
  }
  ExpectValid(*expected.back(), false);

  auto device = Make(SamplingPlacement::kAuto, n);
  ASSERT_TRUE(device);
  ExpectSame(RunAll(*device, requests), expected);
  EXPECT_NE(device->MetricsText().find("jisu:device_mask_fill_seconds_total "), std::string::npos);

  std::vector<EngineRequest> free = requests;
  for (EngineRequest& r : free) r.sampling.structured = {};
  const auto unconstrained = RunAll(*host, free);
  for (double p_wrong : {0.0, 0.3}) {
    for (bool wrong_script : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "p_wrong " << p_wrong << " unconstrained script " << wrong_script);
      auto drafted = [&](SamplingPlacement placement, SchedulerStats* stats) {
        auto drafter = std::make_shared<ScriptedDrafter>(
            3, p_wrong, static_cast<int32_t>(model_->config().vocab_size));
        for (size_t i = 0; i < requests.size(); ++i) {
          drafter->Expect(requests[i].prompt,
                          wrong_script ? unconstrained[i]->tokens : expected[i]->tokens);
        }
        auto engine = Make(placement, n, drafter);
        EXPECT_TRUE(engine);
        if (!engine) return std::vector<std::unique_ptr<Result>>{};
        auto got = RunAll(*engine, requests);
        *stats = engine->scheduler_stats();
        return got;
      };
      SchedulerStats on_host, on_device;
      const auto want = drafted(SamplingPlacement::kHost, &on_host);
      for (size_t i = 0; i < want.size(); ++i) {
        SCOPED_TRACE("request " + std::to_string(i));
        if (i < 4 || i + 1 == want.size()) ExpectValid(*want[i], i == 3);
      }
      ExpectSame(drafted(SamplingPlacement::kAuto, &on_device), want);
      EXPECT_EQ(on_device.num_draft_tokens, on_host.num_draft_tokens);
      EXPECT_EQ(on_device.num_accepted_draft_tokens, on_host.num_accepted_draft_tokens);
      EXPECT_GT(on_device.num_draft_tokens, 0);
      if (!wrong_script) {
        EXPECT_GT(on_device.num_accepted_draft_tokens, 0);
      }
      int same_as_undrafted = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        same_as_undrafted += want[i]->tokens == expected[i]->tokens ? 1 : 0;
      }
      std::printf(
          "p_wrong %.1f unconstrained script %d: drafted %lld accepted %lld; %d of %zu outputs "
          "as without drafts\n",
          p_wrong, wrong_script, static_cast<long long>(on_device.num_draft_tokens),
          static_cast<long long>(on_device.num_accepted_draft_tokens), same_as_undrafted,
          want.size());
    }
  }
}

TEST_F(CudaEngineGrammarTest, SeededDeviceDrawsStayInTheGrammar) {
  std::vector<EngineRequest> requests;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    for (EngineRequest r : testing::Requests(model_->tokenizer())) {
      r.sampling.temperature = 1.0f;
      r.sampling.top_p = 0.95f;
      r.sampling.seed = seed;
      requests.push_back(r);
    }
  }
  auto device = Make(SamplingPlacement::kAuto, static_cast<int64_t>(requests.size()));
  ASSERT_TRUE(device);
  const auto got = RunAll(*device, requests);
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i) + ": " + got[i]->text);
    ExpectValid(*got[i], i % 4 == 3);
  }
}

}  // namespace
}  // namespace jisu
