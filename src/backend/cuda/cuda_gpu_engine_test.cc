// Device sampling against the host sampler's distribution, and the whole engine on the GPU
// (greedy against the CPU generator, seeded sampling). Skips where no GPU is present (CI).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <numeric>
#include <random>

#include "backend/cuda/cuda_test_fixture.h"
#include "engine/engine.h"
#include "runner/generator.h"
#include "sampling/sampler.h"

namespace jisu {
namespace {

// A logits row drawn on the device with the host parameters `sp` and uniform draw u.
RowSampling DeviceRow(const SamplingParams& sp, double u) {
  RowSampling r;
  r.on_device = true;
  r.temperature = sp.temperature;
  r.top_k = sp.top_k;
  r.top_p = sp.top_p;
  r.min_p = sp.min_p;
  r.u = u;
  return r;
}

// The host Sampler's probability of every token that survives its filters (token -> p).
std::map<int32_t, double> HostDistribution(const SamplingParams& sp, const float* logits,
                                           int64_t vocab) {
  Sampler host(sp);
  std::vector<float> scratch(logits, logits + vocab);
  std::map<int32_t, double> prob;
  for (const TokenProb& tp : host.Distribution(scratch.data(), vocab, {}, {})) {
    prob[tp.id] = tp.prob;
  }
  return prob;
}

// Device sampling against the host Sampler on the same logits: row 0 of one step goes to the
// host, rows 1..N are the same logits drawn on the device with u = (i + 0.5) / N. Each drawn
// token must survive the host's filters, and the share of the u grid that lands on a token must
// equal its host probability up to the grid's resolution.
// Draws 1000 tokens from the GPU, `rows_per_call` rows a step, with u on a regular grid, and
// compares each token's share with the host sampler's probability.
void CheckDeviceDraws(ForwardBackend& gpu, const Model& model, const SamplingParams& sp,
                      int rows_per_call) {
  const std::vector<int32_t> prompt = model.tokenizer().Encode("The quick brown fox", false);
  const std::vector<int32_t> blocks = {3, 1};
  const int64_t last = static_cast<int64_t>(prompt.size()) - 1;
  constexpr int kDraws = 1000;
  const int32_t vocab = static_cast<int32_t>(model.config().vocab_size);
  // Row 0 of each step returns its logits (the host's reference); the others draw.
  const std::vector<int64_t> rows(rows_per_call + 1, last);
  ForwardBatch batch{prompt, {BatchSequence{static_cast<int64_t>(prompt.size()), 0, blocks}}, rows};
  std::vector<int32_t> drawn;
  std::vector<float> logits(rows.size() * vocab);
  for (int first = 0; first < kDraws; first += rows_per_call) {
    std::vector<RowSampling> sampling(rows.size());
    for (int j = 1; j <= rows_per_call; ++j) {
      sampling[j] = DeviceRow(sp, (first + j - 0.5) / kDraws);
    }
    std::vector<int32_t> ids(rows.size(), -1);
    Status st = gpu.ForwardSample(batch, sampling, logits.data(), ids.data());
    ASSERT_TRUE(st.ok()) << st.ToString();
    drawn.insert(drawn.end(), ids.begin() + 1, ids.end());
  }
  const std::map<int32_t, double> prob = HostDistribution(sp, logits.data(), vocab);
  std::map<int32_t, int> count;
  for (int32_t id : drawn) {
    ASSERT_TRUE(prob.count(id)) << "T " << sp.temperature << " k " << sp.top_k << " p " << sp.top_p
                                << " min_p " << sp.min_p << ": token " << id
                                << " is filtered out on the host";
    ++count[id];
  }
  // A token's share of the grid differs from its probability by at most one grid step at
  // each end of its interval (plus float noise in the device's running sums).
  for (const auto& [id, p] : prob) {
    EXPECT_NEAR(count[id] / static_cast<double>(drawn.size()), p, 2.0 / kDraws + 1e-4)
        << "token " << id << " T " << sp.temperature << " k " << sp.top_k << " p " << sp.top_p
        << ", " << rows_per_call << " rows a step";
  }
  std::printf(
      "T %.2f top_k %d top_p %.2f min_p %.2f, %d rows a step: %zu tokens kept on the "
      "host, %zu drawn\n",
      sp.temperature, sp.top_k, sp.top_p, sp.min_p, rows_per_call, prob.size(), count.size());
}

SamplingParams Params(float t, int32_t k, float p, float min_p) {
  SamplingParams s;
  s.temperature = t;
  s.top_k = k;
  s.top_p = p;
  s.min_p = min_p;
  s.seed = 1;
  return s;
}

// 1000 rows in one step: one block per row.
TEST_F(CudaBackendTest, DeviceSamplingDrawsFromTheHostSamplersDistribution) {
  auto model = Load("tiny-llama");
  ASSERT_TRUE(model);
  auto gpu = Gpu(*model, 16);
  ASSERT_TRUE(gpu && gpu->CanSample());
  for (const SamplingParams& sp :
       {Params(0, 0, 1, 0), Params(1, 0, 1, 0), Params(0.8f, 0, 1, 0), Params(1.2f, 7, 1, 0),
        Params(0.7f, 0, 0.8f, 0), Params(1, 0, 1, 0.05f), Params(0.9f, 20, 0.9f, 0.02f),
        Params(1.5f, 3000, 0.95f, 0)}) {
    CheckDeviceDraws(*gpu, *model, sp, 1000);
  }
}

// Few rows a step: each row split over several blocks of one cooperative grid (greedy rows
// too, which must still reach every grid sync).
TEST_F(CudaBackendTest, DeviceSamplingSplitRowsDrawFromTheHostSamplersDistribution) {
  auto model = Load("tiny-llama");
  ASSERT_TRUE(model);
  auto gpu = Gpu(*model, 16);
  ASSERT_TRUE(gpu && gpu->CanSample());
  for (const SamplingParams& sp : {Params(0, 0, 1, 0), Params(0.8f, 0, 1, 0),
                                   Params(0.9f, 20, 0.9f, 0.02f), Params(1.5f, 3000, 0.95f, 0)}) {
    CheckDeviceDraws(*gpu, *model, sp, 4);
  }
  CheckDeviceDraws(*gpu, *model, Params(0.7f, 0, 0.8f, 0), 1);
}

// Rows with different filters in one split grid: a filter one row uses runs in every block of
// the grid (it holds the grid syncs in step), as a no-op for the rows without it.
TEST_F(CudaBackendTest, DeviceSamplingMixedFiltersInOneGrid) {
  auto model = Load("tiny-llama");
  ASSERT_TRUE(model);
  auto gpu = Gpu(*model, 16);
  ASSERT_TRUE(gpu && gpu->CanSample());
  const std::vector<SamplingParams> row_params = {Params(0, 0, 1, 0), Params(1.2f, 7, 1, 0),
                                                  Params(0.7f, 0, 0.8f, 0), Params(1, 0, 1, 0)};
  const std::vector<int32_t> prompt = model->tokenizer().Encode("The quick brown fox", false);
  const std::vector<int32_t> blocks = {3, 1};
  const int64_t last = static_cast<int64_t>(prompt.size()) - 1;
  const int32_t vocab = static_cast<int32_t>(model->config().vocab_size);
  const int rows_per_call = static_cast<int>(row_params.size());
  constexpr int kSteps = 400;
  const std::vector<int64_t> rows(rows_per_call + 1, last);
  ForwardBatch batch{prompt, {BatchSequence{static_cast<int64_t>(prompt.size()), 0, blocks}}, rows};
  std::vector<std::map<int32_t, int>> count(rows_per_call);
  std::vector<float> logits(rows.size() * vocab);
  for (int step = 0; step < kSteps; ++step) {
    std::vector<RowSampling> sampling(rows.size());
    for (int j = 1; j <= rows_per_call; ++j) {
      sampling[j] = DeviceRow(row_params[j - 1], (step + 0.5) / kSteps);
    }
    std::vector<int32_t> ids(rows.size(), -1);
    Status st = gpu->ForwardSample(batch, sampling, logits.data(), ids.data());
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (int j = 1; j <= rows_per_call; ++j) ++count[j - 1][ids[j]];
  }
  for (int j = 0; j < rows_per_call; ++j) {
    const std::map<int32_t, double> prob = HostDistribution(row_params[j], logits.data(), vocab);
    for (const auto& [id, n] : count[j]) {
      EXPECT_TRUE(prob.count(id)) << "row " << j << ": token " << id << " is filtered on the host";
    }
    for (const auto& [id, p] : prob) {
      const auto it = count[j].find(id);
      const double share = it == count[j].end() ? 0.0 : it->second / static_cast<double>(kSteps);
      EXPECT_NEAR(share, p, 2.0 / kSteps + 1e-4) << "row " << j << " token " << id;
    }
  }
}

// Runs the prompts concurrently through an engine on the GPU; returns each one's tokens.
std::vector<std::vector<int32_t>> RunGpuEngine(const Model& model,
                                               const std::vector<std::vector<int32_t>>& prompts,
                                               const SamplingParams& sampling, bool device_sampling,
                                               int64_t max_batch_tokens = 0) {
  EngineOptions options;
  options.scheduler.block_size = 16;
  options.scheduler.max_model_len = 512;
  if (max_batch_tokens > 0) options.scheduler.max_batch_tokens = max_batch_tokens;
  options.defaults.sampling = device_sampling ? SamplingPlacement::kAuto : SamplingPlacement::kHost;
  auto engine = Engine::Create(model, options, CudaBackendTest::Gpu(model, 128));
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  if (!engine.ok()) return {};
  EXPECT_NE((*engine)->backend().description().find("cuda"), std::string::npos);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<int32_t>> got(prompts.size());
  int finished = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EngineRequest r;
    r.prompt = prompts[i];
    r.sampling = sampling;
    r.sampling.seed = 100 + i;
    auto id = (*engine)->Submit(r, [&, i](const EngineOutput& o) {
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
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(120),
                          [&] { return finished == static_cast<int>(prompts.size()); }));
  return got;
}

// The whole engine on the GPU: concurrent greedy requests give the CPU generator's tokens.
TEST_F(CudaBackendTest, EngineOnGpuMatchesCpuGreedy) {
  auto model = Load("tiny-llama");
  ASSERT_TRUE(model);
  const Tokenizer& tok = model->tokenizer();
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 6; ++i) {
    prompts.push_back(tok.Encode(
        "# Helpers for parsing files.\ndef parse_" + std::to_string(i) + "(path", false));
  }
  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.ignore_eos = true;
  greedy.max_tokens = 12;
  ThreadPool pool(2);
  auto gen = Generator::Create(*model, pool);
  ASSERT_TRUE(gen.ok());
  std::vector<std::vector<int32_t>> expected;
  for (const auto& p : prompts) expected.push_back((*gen)->Generate(p, greedy)->output_ids);

  // A 64-token step budget forces chunked prefill next to decodes.
  const auto got = RunGpuEngine(*model, prompts, greedy, /*device_sampling=*/true, 64);
  ASSERT_EQ(got.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "request " << i;
}

// Seeded sampling through the engine with draws on the device: the same seeds give the same
// tokens run to run, every request runs to max_tokens, and the host path (device sampling
// off) produces the same number of tokens from the same seeds.
TEST_F(CudaBackendTest, EngineDeviceSamplingIsSeededAndComplete) {
  auto model = Load("tiny-llama");
  ASSERT_TRUE(model);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 8; ++i) {
    prompts.push_back(model->tokenizer().Encode("Once upon a time " + std::to_string(i), false));
  }
  SamplingParams s;
  s.temperature = 0.9f;
  s.top_p = 0.9f;
  s.top_k = 40;
  s.ignore_eos = true;
  s.max_tokens = 24;
  const auto a = RunGpuEngine(*model, prompts, s, true);
  const auto b = RunGpuEngine(*model, prompts, s, true);
  const auto host = RunGpuEngine(*model, prompts, s, false);
  ASSERT_EQ(a.size(), prompts.size());
  int differs_from_host = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(a[i], b[i]) << "request " << i;
    EXPECT_EQ(a[i].size(), 24u);
    EXPECT_EQ(host[i].size(), 24u);
    for (int32_t t : a[i]) EXPECT_TRUE(t >= 0 && t < model->config().vocab_size);
    differs_from_host += a[i] != host[i];
  }
  std::printf("device vs host draws differ in %d of %zu sequences (same seeds, own walk order)\n",
              differs_from_host, prompts.size());
}

}  // namespace
}  // namespace jisu
