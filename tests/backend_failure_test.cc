// An injected backend failure in one step (issue 37): a backend whose forward pass fails (as a
// failed CUDA allocation would) at a chosen step. The requests of that step end with
// FinishReason::kError and the backend's message, every other request finishes with exactly the
// tokens of a run without the fault, no KV block leaks, and the engine (and the HTTP server
// over it) keeps serving: nothing is lost silently and nothing is corrupted.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "backend/cpu/cpu_backend.h"
#include "engine/engine.h"
#include "server/http_server.h"
#include "tests/test_util.h"
#include "tests/tiny_llama_suite.h"

namespace jisu {
namespace {

using namespace std::chrono_literals;

// A CPU backend whose Forward fails when `fail(batch, call)` says so (call counts from 1),
// recording how many sequences each failed batch held.
class FaultyBackend final : public ForwardBackend {
 public:
  using FailFn = std::function<bool(const ForwardBatch&, int64_t call)>;
  FaultyBackend(std::unique_ptr<ForwardBackend> inner, FailFn fail)
      : inner_(std::move(inner)), fail_(std::move(fail)) {}
  const ModelConfig& config() const override { return inner_->config(); }
  int64_t num_kv_blocks() const override { return inner_->num_kv_blocks(); }
  int64_t kv_block_size() const override { return inner_->kv_block_size(); }
  uint64_t kv_bytes_per_block() const override { return inner_->kv_bytes_per_block(); }
  ThreadPool* host_pool() override { return inner_->host_pool(); }
  bool HasMatmulPaths() const override { return inner_->HasMatmulPaths(); }
  std::string description() const override { return "faulty " + inner_->description(); }
  Status Forward(const ForwardBatch& batch, float* logits) override {
    const int64_t call = ++calls;
    if (fail_(batch, call)) {
      std::lock_guard<std::mutex> lock(mu);
      failed_batch_sizes.push_back(static_cast<int64_t>(batch.sequences.size()));
      return Status::Internal("injected fault: device allocation failed at step " +
                              std::to_string(call));
    }
    return inner_->Forward(batch, logits);
  }

  // The sizes of the failed batches, read under the lock (written on the engine's thread).
  std::vector<int64_t> FailedBatchSizes() {
    std::lock_guard<std::mutex> lock(mu);
    return failed_batch_sizes;
  }

  std::atomic<int64_t> calls{0};
  std::mutex mu;
  std::vector<int64_t> failed_batch_sizes;

 private:
  std::unique_ptr<ForwardBackend> inner_;
  FailFn fail_;
};

struct Collector {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int32_t> tokens;
  FinishReason reason = FinishReason::kNone;
  Status error;
  bool done = false;
  OutputCallback Callback() {
    return [this](const EngineOutput& o) {
      std::lock_guard<std::mutex> lock(mu);
      tokens.insert(tokens.end(), o.token_ids.begin(), o.token_ids.end());
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
    return cv.wait_for(lock, 120s, [&] { return done; });
  }
};

class BackendFailureTest : public testing::TinyLlamaSuite {
 protected:
  static EngineOptions Options() {
    EngineOptions o;
    o.scheduler.block_size = 16;
    o.scheduler.max_model_len = 256;
    o.scheduler.max_batch_tokens = 256;
    o.scheduler.max_seqs = 4;  // with 8 requests, some wait while the fault hits
    o.num_threads = 2;
    return o;
  }
  static std::unique_ptr<Engine> Make(FaultyBackend::FailFn fail, FaultyBackend** backend) {
    auto inner = CpuBackend::Create(*model_, CpuBackendOptions{64, 16, 2});
    EXPECT_TRUE(inner.ok());
    auto faulty = std::make_unique<FaultyBackend>(std::move(inner).value(), std::move(fail));
    *backend = faulty.get();
    auto e = Engine::Create(*model_, Options(), std::move(faulty));
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return std::move(e).value();
  }
  static EngineRequest Greedy(int i) {
    EngineRequest r;
    // Two full blocks of shared prefix, so prefix-cache entries are made (and must stay sound).
    r.prompt = model_->tokenizer().Encode(
        "# A module of helpers for reading configuration files and command lines, with tests.\n"
        "# Each helper documents its arguments and what it returns.\ndef helper_" +
            std::to_string(i) + "(value",
        false);
    r.sampling.temperature = 0;
    r.sampling.ignore_eos = true;
    r.sampling.max_tokens = 24;
    return r;
  }
  // The tokens of each request run alone on an engine without faults.
  static std::vector<std::vector<int32_t>> Reference(int n) {
    auto e = Engine::Create(*model_, [] {
      EngineOptions o = Options();
      o.kv_blocks = 64;
      return o;
    }());
    EXPECT_TRUE(e.ok());
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < n; ++i) {
      Collector c;
      EXPECT_TRUE((*e)->Submit(Greedy(i), c.Callback()).ok());
      EXPECT_TRUE(c.Wait());
      out.push_back(c.tokens);
    }
    return out;
  }
  static void WaitNoBlocksInUse(Engine& e) {
    for (int i = 0; i < 10000 && e.pool_stats().num_in_use != 0; ++i) {
      std::this_thread::sleep_for(1ms);
    }
  }
};

// Submits n requests at once; counts finished-with-output, errored (with the injected message),
// lost (no final output in time) and corrupted (finished, with tokens other than `reference`).
struct Tally {
  int completed = 0, errored = 0, lost = 0, corrupted = 0;
};
Tally RunAll(Engine& engine, int n, const std::vector<std::vector<int32_t>>& reference,
             EngineRequest (*make)(int)) {
  std::vector<Collector> cs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(engine.Submit(make(i), cs[static_cast<size_t>(i)].Callback()).ok());
  }
  Tally t;
  for (int i = 0; i < n; ++i) {
    Collector& c = cs[static_cast<size_t>(i)];
    if (!c.Wait()) {
      ++t.lost;
      continue;
    }
    if (c.reason == FinishReason::kError) {
      const bool clear = c.error.message().find("injected fault") != std::string::npos;
      ++(clear ? t.errored : t.lost);
      continue;
    }
    ++t.completed;
    if (c.reason != FinishReason::kLength || c.tokens != reference[static_cast<size_t>(i)]) {
      ++t.corrupted;
    }
  }
  return t;
}

TEST_F(BackendFailureTest, FailedStepErrorsItsRequestsOthersFinishEngineKeepsServing) {
  constexpr int kRequests = 8;
  const auto reference = Reference(kRequests);
  // Fail at several points of a request's life: its first prefill, a step mixing prefill and
  // decode, a pure decode step.
  for (int64_t fail_at : {1, 3, 10}) {
    SCOPED_TRACE("failing forward call " + std::to_string(fail_at));
    FaultyBackend* backend = nullptr;
    auto engine =
        Make([fail_at](const ForwardBatch&, int64_t call) { return call == fail_at; }, &backend);
    const auto t0 = std::chrono::steady_clock::now();
    Tally t = RunAll(*engine, kRequests, reference, &Greedy);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::vector<int64_t> failed_batches = backend->FailedBatchSizes();
    ASSERT_EQ(failed_batches.size(), 1u);
    const int64_t failed = failed_batches[0];
    std::printf(
        "  [backend_failure at call %lld] completed %d, errored %d (batch of %lld), lost %d, "
        "corrupted %d; %.1fs\n",
        static_cast<long long>(fail_at), t.completed, t.errored, static_cast<long long>(failed),
        t.lost, t.corrupted, seconds);
    EXPECT_EQ(t.lost, 0);
    EXPECT_EQ(t.corrupted, 0);
    EXPECT_EQ(t.errored, failed);  // exactly the requests of the failed step
    EXPECT_EQ(t.completed, kRequests - failed);
    EXPECT_GT(t.completed, 0);  // max_seqs 4: the waiting ones were not in the failed step
    WaitNoBlocksInUse(*engine);
    EXPECT_EQ(engine->pool_stats().num_in_use, 0);
    // Afterwards the same prompts (whose blocks the failed step had allocated, and whose
    // prefixes other requests cached) give exactly the reference tokens again.
    t = RunAll(*engine, kRequests, reference, &Greedy);
    EXPECT_EQ(t.completed, kRequests);
    EXPECT_EQ(t.corrupted, 0);
    WaitNoBlocksInUse(*engine);
    EXPECT_EQ(engine->pool_stats().num_in_use, 0);
    const std::string metrics = engine->MetricsText();
    EXPECT_NE(metrics.find("jisu:requests_finished_total{finished_reason=\"error\"} " +
                           std::to_string(failed) + "\n"),
              std::string::npos)
        << metrics;
  }
}

TEST_F(BackendFailureTest, EveryStepFailingForAWhileLosesNothing) {
  // A backend that fails every step for a while (a device out of memory until requests drain):
  // each request is told, none hangs; then it recovers and serves correctly.
  constexpr int kRequests = 8;
  const auto reference = Reference(kRequests);
  std::atomic<bool> broken{true};
  FaultyBackend* backend = nullptr;
  auto engine = Make([&broken](const ForwardBatch&, int64_t) { return broken.load(); }, &backend);
  Tally t = RunAll(*engine, kRequests, reference, &Greedy);
  EXPECT_EQ(t.lost, 0);
  EXPECT_EQ(t.errored, kRequests);
  WaitNoBlocksInUse(*engine);
  EXPECT_EQ(engine->pool_stats().num_in_use, 0);
  broken = false;
  t = RunAll(*engine, kRequests, reference, &Greedy);
  EXPECT_EQ(t.completed, kRequests);
  EXPECT_EQ(t.corrupted, 0);
}

TEST_F(BackendFailureTest, ServerAnswersErrorsForTheFailedStepAndStaysHealthy) {
  // The first step that holds both requests fails: the non-streaming one gets a 500 with the
  // message, the streaming one an error event and then [DONE]; /health stays 200 and the next
  // requests are served.
  std::atomic<bool> armed{true};
  FaultyBackend* backend = nullptr;
  auto engine = Make([&armed](const ForwardBatch& b,
                              int64_t) { return b.sequences.size() >= 2 && armed.exchange(false); },
                     &backend);
  server::ServerOptions so;
  so.port = 0;
  server::HttpServer http(so);
  ASSERT_TRUE(http.Start().ok());
  ASSERT_TRUE(http.SetReady(server::ServedModel{model_, engine.get(), "tiny", 256, 16, 1024}).ok());
  auto client = [&] {
    httplib::Client c("127.0.0.1", http.port());
    c.set_read_timeout(60, 0);
    return c;
  };
  const std::string body = R"({"prompt":"def main(","max_tokens":64,"ignore_eos":true,)"
                           R"("temperature":0)";
  std::optional<httplib::Response> plain, streamed;
  std::thread a([&] {
    if (auto r = client().Post("/v1/completions", body + "}", "application/json")) plain = *r;
  });
  std::thread b([&] {
    const std::string stream_body = body + R"(,"stream":true})";
    if (auto r = client().Post("/v1/completions", stream_body, "application/json")) streamed = *r;
  });
  a.join();
  b.join();
  ASSERT_TRUE(plain.has_value());
  ASSERT_TRUE(streamed.has_value());
  ASSERT_EQ(backend->FailedBatchSizes().size(), 1u);
  EXPECT_EQ(plain->status, 500) << plain->body;
  const auto err = nlohmann::json::parse(plain->body)["error"];
  EXPECT_EQ(err["type"], "server_error");
  EXPECT_NE(err["message"].get<std::string>().find("injected fault"), std::string::npos) << err;
  EXPECT_EQ(streamed->status, 200);
  EXPECT_NE(streamed->body.find(R"("type":"server_error")"), std::string::npos) << streamed->body;
  EXPECT_NE(streamed->body.find("injected fault"), std::string::npos);
  EXPECT_NE(streamed->body.find("data: [DONE]"), std::string::npos);
  auto health = client().Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto again = client().Post("/v1/completions", body + "}", "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200) << again->body;
  WaitNoBlocksInUse(*engine);
  EXPECT_EQ(engine->pool_stats().num_in_use, 0);
  http.Shutdown(5);
}

}  // namespace
}  // namespace jisu
