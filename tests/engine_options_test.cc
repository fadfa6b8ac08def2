// Per-request options through the engine on the bundled model (as Q8_0, where the float and
// int8 matmul paths give different numbers): a request's matmul path computes exactly what an
// engine with that default computes, requests on different paths run side by side, the prefix
// cache keeps their K/V apart, sampling placement and the speculative window are per request,
// and CheckOptions refuses what the engine cannot run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "backend/cpu/cpu_backend.h"
#include "convert/hf_to_gguf.h"
#include "engine/engine.h"
#include "tests/fake_device_sampling.h"
#include "tests/test_util.h"

namespace jisu {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// One request's tokens and every token's logprobs (the sampled one and the top 20): a
// fingerprint of its logits rows.
struct Outcome {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  int64_t cached = -1;
  FinishReason reason = FinishReason::kNone;
};

struct Collector {
  std::mutex mu;
  std::condition_variable cv;
  Outcome run;
  bool done = false;
  OutputCallback Callback() {
    return [this](const EngineOutput& o) {
      std::lock_guard<std::mutex> lock(mu);
      run.tokens.insert(run.tokens.end(), o.token_ids.begin(), o.token_ids.end());
      for (const SampledLogprobs& lp : o.logprobs) {
        run.logprobs.push_back(lp.logprob);
        for (const TokenLogprob& t : lp.top) run.logprobs.push_back(t.logprob);
      }
      run.cached = o.num_cached_prompt_tokens;
      if (o.finished) {
        run.reason = o.finish_reason;
        done = true;
        cv.notify_all();
      }
    };
  }
  Outcome Wait() {
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, 120s, [&] { return done; }));
    return run;
  }
};

// A CPU backend seen through another backend's capabilities: without matmul paths (as CUDA), or
// drawing greedy tokens "on the device" (CanSample), counting the rows it drew.
class WrappedBackend final : public ForwardBackend {
 public:
  WrappedBackend(std::unique_ptr<ForwardBackend> inner, bool matmul_paths, bool can_sample)
      : inner_(std::move(inner)), matmul_paths_(matmul_paths), can_sample_(can_sample) {}
  const ModelConfig& config() const override { return inner_->config(); }
  int64_t num_kv_blocks() const override { return inner_->num_kv_blocks(); }
  int64_t kv_block_size() const override { return inner_->kv_block_size(); }
  uint64_t kv_bytes_per_block() const override { return inner_->kv_bytes_per_block(); }
  Status Forward(const ForwardBatch& batch, float* logits) override {
    return inner_->Forward(batch, logits);
  }
  bool CanSample() const override { return can_sample_; }
  using ForwardBackend::ForwardSample;
  Status ForwardSample(const ForwardBatch& batch, std::span<const RowSampling> sampling,
                       FillTokenMasksFn fill_masks, float* logits, int32_t* ids) override {
    JISU_RETURN_IF_ERROR(inner_->Forward(batch, logits));
    testing::DrawDeviceRows(sampling, fill_masks, logits, config().vocab_size, ids);
    for (const RowSampling& r : sampling) device_rows += r.on_device ? 1 : 0;
    return Status::Ok();
  }
  bool HasMatmulPaths() const override { return matmul_paths_; }
  ThreadPool* host_pool() override { return inner_->host_pool(); }
  std::string description() const override { return "wrapped"; }

  std::atomic<int64_t> device_rows{0};

 private:
  std::unique_ptr<ForwardBackend> inner_;
  bool matmul_paths_, can_sample_;
};

// Records the window every proposal was asked for; proposes token 0 (mostly rejected).
class RecordingDrafter final : public Drafter {
 public:
  void Propose(int64_t request_id, std::span<const int32_t> tokens, int64_t max_tokens,
               std::vector<int32_t>* drafts) override {
    std::lock_guard<std::mutex> lock(mu);
    windows[request_id].push_back(max_tokens);
    drafts->assign(static_cast<size_t>(max_tokens), 0);
  }
  std::mutex mu;
  std::map<int64_t, std::vector<int64_t>> windows;
};

class EngineRequestOptionsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = fs::temp_directory_path() /
            ("jisu_engine_options_q8_0_" + std::to_string(::getpid()) + ".gguf");
    ConvertOptions convert;
    convert.type = DType::kQ8_0;
    const Status s = ConvertHfToGguf((testing::SourceDir() / "models" / "tiny-llama").string(),
                                     path_.string(), convert);
    ASSERT_TRUE(s.ok()) << s.ToString();
    auto m = Model::Load(path_.string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value().release();
  }
  static void TearDownTestSuite() {
    delete model_;
    fs::remove(path_);
  }

  static EngineOptions Options(MatmulPath default_path = MatmulPath::kAuto) {
    EngineOptions o;
    o.kv_blocks = 128;
    o.scheduler.block_size = 16;
    o.scheduler.max_model_len = 256;
    o.scheduler.max_batch_tokens = 128;
    o.num_threads = 2;
    o.defaults.matmul = default_path;
    return o;
  }
  static std::unique_ptr<Engine> Make(const EngineOptions& o,
                                      std::unique_ptr<ForwardBackend> backend = nullptr) {
    auto e = Engine::Create(*model_, o, std::move(backend));
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(e).value() : nullptr;
  }
  static std::unique_ptr<WrappedBackend> Wrapped(MatmulPath layout, bool matmul_paths,
                                                 bool can_sample) {
    CpuBackendOptions cpu{128, 16, 2};
    cpu.weights.matmul = layout;
    auto inner = CpuBackend::Create(*model_, cpu);
    EXPECT_TRUE(inner.ok());
    return std::make_unique<WrappedBackend>(std::move(inner).value(), matmul_paths, can_sample);
  }
  static std::vector<int32_t> Prompt(int i) {
    return model_->tokenizer().Encode(
        "# Parsing configuration files, take " + std::to_string(i) + "\ndef load(path", false);
  }
  static EngineRequest Greedy(std::vector<int32_t> prompt, const RequestOptions& options,
                              int32_t max_tokens = 12) {
    EngineRequest r;
    r.prompt = std::move(prompt);
    r.sampling.temperature = 0;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = max_tokens;
    r.top_logprobs = 20;
    r.options = options;
    return r;
  }
  static Outcome Generate(Engine& engine, EngineRequest r) {
    Collector c;
    auto id = engine.Submit(std::move(r), c.Callback());
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return c.Wait();
  }
  static RequestOptions WithMatmul(MatmulPath p) {
    RequestOptions o;
    o.matmul = p;
    return o;
  }

  static fs::path path_;
  static Model* model_;
};

fs::path EngineRequestOptionsTest::path_;
Model* EngineRequestOptionsTest::model_ = nullptr;

TEST_F(EngineRequestOptionsTest, RequestPathEqualsAnEngineDefaultingToIt) {
  auto mixed = Make(Options());
  std::map<MatmulPath, Outcome> runs;
  for (MatmulPath path : {MatmulPath::kFloat, MatmulPath::kInt8}) {
    auto dedicated = Make(Options(path));
    const Outcome want = Generate(*dedicated, Greedy(Prompt(1), RequestOptions{}));
    const Outcome got = Generate(*mixed, Greedy(Prompt(1), WithMatmul(path)));
    ASSERT_EQ(want.tokens.size(), 12u);
    EXPECT_EQ(got.tokens, want.tokens) << MatmulPathName(path);
    EXPECT_EQ(got.logprobs, want.logprobs) << MatmulPathName(path) << ": not bit-identical";
    runs[path] = got;
  }
  // The option is honoured: the two paths round differently.
  EXPECT_NE(runs[MatmulPath::kFloat].logprobs, runs[MatmulPath::kInt8].logprobs);
}

TEST_F(EngineRequestOptionsTest, RequestsOnTwoPathsRunSideBySide) {
  EngineOptions o = Options();
  o.batch_window_ms = 200;  // both arrivals are queued before the first step
  auto engine = Make(o);
  std::map<MatmulPath, Outcome> alone;
  for (MatmulPath path : {MatmulPath::kFloat, MatmulPath::kInt8}) {
    alone[path] = Generate(*engine, Greedy(Prompt(2), WithMatmul(path), 24));
  }
  Collector f, i;
  ASSERT_TRUE(
      engine->Submit(Greedy(Prompt(2), WithMatmul(MatmulPath::kFloat), 24), f.Callback()).ok());
  ASSERT_TRUE(
      engine->Submit(Greedy(Prompt(2), WithMatmul(MatmulPath::kInt8), 24), i.Callback()).ok());
  const Outcome got_f = f.Wait(), got_i = i.Wait();
  // Steps never mix the paths, so each computes exactly what it computes alone.
  EXPECT_EQ(got_f.tokens, alone[MatmulPath::kFloat].tokens);
  EXPECT_EQ(got_f.logprobs, alone[MatmulPath::kFloat].logprobs);
  EXPECT_EQ(got_i.tokens, alone[MatmulPath::kInt8].tokens);
  EXPECT_EQ(got_i.logprobs, alone[MatmulPath::kInt8].logprobs);
  for (int i = 0; i < 2000 && engine->pool_stats().num_in_use != 0; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(engine->pool_stats().num_in_use, 0);
}

TEST_F(EngineRequestOptionsTest, PrefixCacheKeepsPathsApart) {
  EngineOptions o = Options();
  o.prefix_cache = PrefixCacheMode::kFull;
  auto engine = Make(o);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 4; ++i) {
    const auto p = Prompt(10 + i);
    prompt.insert(prompt.end(), p.begin(), p.end());
  }
  ASSERT_GE(prompt.size(), 40u);  // at least two full blocks of 16
  const int64_t full = static_cast<int64_t>((prompt.size() - 1) / 16 * 16);
  EXPECT_EQ(Generate(*engine, Greedy(prompt, WithMatmul(MatmulPath::kFloat), 2)).cached, 0);
  EXPECT_EQ(Generate(*engine, Greedy(prompt, WithMatmul(MatmulPath::kInt8), 2)).cached, 0);
  EXPECT_EQ(Generate(*engine, Greedy(prompt, WithMatmul(MatmulPath::kFloat), 2)).cached, full);
  EXPECT_EQ(Generate(*engine, Greedy(prompt, WithMatmul(MatmulPath::kInt8), 2)).cached, full);
  RequestOptions host = WithMatmul(MatmulPath::kInt8);
  host.sampling = SamplingPlacement::kHost;  // changes no K/V: shares
  EXPECT_EQ(Generate(*engine, Greedy(prompt, host, 2)).cached, full);
}

TEST_F(EngineRequestOptionsTest, CheckOptionsRefusesWhatTheEngineCannotRun) {
  auto engine = Make(Options());
  SamplingParams greedy;
  greedy.temperature = 0;
  EXPECT_TRUE(engine->CheckOptions(WithMatmul(MatmulPath::kFloat), greedy).ok());
  RequestOptions o;
  o.weights = "w8a8";
  Status s = engine->CheckOptions(o, greedy);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("weights ", 0), 0u) << s.message();
  o = {};
  o.speculative = 2;
  s = engine->CheckOptions(o, greedy);
  EXPECT_EQ(s.message().rfind("speculative ", 0), 0u) << s.message();
  o.speculative = 0;  // off is always fine
  EXPECT_TRUE(engine->CheckOptions(o, greedy).ok());
  o.speculative = 65;
  EXPECT_FALSE(engine->CheckOptions(o, greedy).ok());

  // A backend with one matmul path (as CUDA) takes auto only, for requests and defaults.
  auto one_path = Make(Options(), Wrapped(MatmulPath::kAuto, false, false));
  s = one_path->CheckOptions(WithMatmul(MatmulPath::kInt8), greedy);
  EXPECT_EQ(s.message().rfind("matmul ", 0), 0u) << s.message();
  EXPECT_TRUE(one_path->CheckOptions(RequestOptions{}, greedy).ok());
  auto refused = Engine::Create(*model_, Options(MatmulPath::kFloat),
                                Wrapped(MatmulPath::kAuto, false, false));
  EXPECT_EQ(refused.status().code(), Status::Code::kInvalidArgument);

  // With a drafter: a window for greedy requests only.
  EngineOptions spec = Options();
  spec.drafter = std::make_shared<RecordingDrafter>();
  auto speculating = Make(spec);
  o = {};
  o.speculative = 3;
  EXPECT_TRUE(speculating->CheckOptions(o, greedy).ok());
  SamplingParams sampled;
  s = speculating->CheckOptions(o, sampled);
  EXPECT_EQ(s.message().rfind("speculative ", 0), 0u) << s.message();
}

TEST_F(EngineRequestOptionsTest, SamplingPlacementIsPerRequest) {
  auto backend = Wrapped(MatmulPath::kAuto, true, true);
  WrappedBackend* seen = backend.get();
  auto engine = Make(Options(), std::move(backend));
  EngineRequest r = Greedy(Prompt(3), RequestOptions{}, 6);
  r.top_logprobs = -1;  // logprobs need host rows
  const Outcome on_device = Generate(*engine, r);
  EXPECT_EQ(seen->device_rows.load(), 6);
  r.options.sampling = SamplingPlacement::kHost;
  const Outcome on_host = Generate(*engine, r);
  EXPECT_EQ(seen->device_rows.load(), 6);  // none more
  EXPECT_EQ(on_host.tokens, on_device.tokens);

  // An engine defaulting to the host still draws on the device for a request that asks.
  auto backend2 = Wrapped(MatmulPath::kAuto, true, true);
  WrappedBackend* seen2 = backend2.get();
  EngineOptions host_default = Options();
  host_default.defaults.sampling = SamplingPlacement::kHost;
  auto engine2 = Make(host_default, std::move(backend2));
  r.options.sampling = SamplingPlacement::kAuto;
  Generate(*engine2, r);
  EXPECT_EQ(seen2->device_rows.load(), 0);
  r.options.sampling = SamplingPlacement::kDevice;
  EXPECT_EQ(Generate(*engine2, r).tokens, on_device.tokens);
  EXPECT_EQ(seen2->device_rows.load(), 6);
}

TEST_F(EngineRequestOptionsTest, SpeculativeWindowIsPerRequest) {
  auto drafter = std::make_shared<RecordingDrafter>();
  EngineOptions o = Options();
  o.drafter = drafter;
  o.max_draft_tokens = 3;
  auto engine = Make(o);
  std::map<int, Outcome> runs;
  for (int k : {-1, 0, 2}) {  // -1: auto
    RequestOptions opt;
    if (k >= 0) opt.speculative = k;
    runs[k] = Generate(*engine, Greedy(Prompt(4), opt, 8));
  }
  EXPECT_EQ(runs[0].tokens, runs[-1].tokens);  // drafts never change greedy output
  EXPECT_EQ(runs[2].tokens, runs[-1].tokens);
  std::lock_guard<std::mutex> lock(drafter->mu);
  ASSERT_EQ(drafter->windows.size(), 2u);  // the request with speculation off was never asked
  auto it = drafter->windows.begin();
  for (int64_t w : it->second) EXPECT_EQ(w, 3) << "auto: the engine's max_draft_tokens";
  ++it;
  for (int64_t w : it->second) EXPECT_EQ(w, 2);
}

}  // namespace
}  // namespace jisu
