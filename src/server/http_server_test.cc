// The server in process on a free port with the bundled tiny-llama model, driven by
// httplib::Client: health before/after ready, chat and completion shapes, SSE framing,
// API-key check, queue-full 429 with Retry-After, and drain.
#include "server/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tests/test_util.h"

namespace jisu::server {
namespace {

using Json = nlohmann::json;

class HttpServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load((testing::SourceDir() / "models" / "tiny-llama").string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value().release();
  }
  static void TearDownTestSuite() { delete model_; }

  void StartServer(ServerOptions options, int64_t max_queue = 64) {
    options.port = 0;
    server_ = std::make_unique<HttpServer>(options);
    ASSERT_TRUE(server_->Start().ok());
    EngineOptions eo;
    eo.kv_blocks = 256;
    eo.scheduler.block_size = 16;
    eo.scheduler.max_model_len = 512;
    eo.scheduler.max_batch_tokens = 256;
    eo.scheduler.max_queue = max_queue;
    eo.num_threads = 2;
    auto e = Engine::Create(*model_, eo);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    served_ = ServedModel{model_, engine_.get(), "tiny", 512, 16, max_queue};
  }
  void TearDown() override {
    if (server_) server_->Shutdown(5);
    server_.reset();
    engine_.reset();
  }
  httplib::Client Client() {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(60, 0);
    return c;
  }

  static Model* model_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<Engine> engine_;
  ServedModel served_;
};
Model* HttpServerTest::model_ = nullptr;

TEST_F(HttpServerTest, HealthIs503UntilReady) {
  StartServer({});
  auto c = Client();
  auto r = c.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  auto gen = c.Post("/v1/completions", R"({"prompt":"x"})", "application/json");
  ASSERT_TRUE(gen);
  EXPECT_EQ(gen->status, 503);
  ASSERT_TRUE(server_->SetReady(served_).ok());
  r = c.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, CompletionAndChatShapes) {
  StartServer({});
  ASSERT_TRUE(server_->SetReady(served_).ok());
  auto c = Client();
  auto r = c.Post("/v1/completions",
                  R"({"prompt":"Once upon a time","max_tokens":4,"temperature":0,
                      "ignore_eos":true,"n":2})",
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "tiny");
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][0]["text"], j["choices"][1]["text"]);  // greedy
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 8);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int>() + 8);

  r = c.Post("/v1/chat/completions",
             R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":3,"temperature":0})",
             "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  j = Json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(j["usage"]["prompt_tokens_details"].contains("cached_tokens"));
}

TEST_F(HttpServerTest, StreamingEndsWithDone) {
  StartServer({});
  ASSERT_TRUE(server_->SetReady(served_).ok());
  auto c = Client();
  auto r = c.Post("/v1/completions",
                  R"({"prompt":"Hello","max_tokens":5,"temperature":0,"ignore_eos":true,
                      "stream":true,"stream_options":{"include_usage":true}})",
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  std::vector<std::string> events;
  size_t pos = 0;
  while ((pos = r->body.find("data: ", pos)) != std::string::npos) {
    const size_t end = r->body.find("\n\n", pos);
    ASSERT_NE(end, std::string::npos);
    events.push_back(r->body.substr(pos + 6, end - pos - 6));
    pos = end;
  }
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  const Json usage = Json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 5);
  std::string text;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    text += Json::parse(events[i])["choices"][0]["text"].get<std::string>();
  }
  auto whole = c.Post("/v1/completions",
                      R"({"prompt":"Hello","max_tokens":5,"temperature":0,"ignore_eos":true})",
                      "application/json");
  ASSERT_TRUE(whole);
  EXPECT_EQ(text, Json::parse(whole->body)["choices"][0]["text"].get<std::string>());
}

TEST_F(HttpServerTest, ApiKeyRequiredOnV1Only) {
  ServerOptions o;
  o.api_key = "secret";
  StartServer(o);
  ASSERT_TRUE(server_->SetReady(served_).ok());
  auto c = Client();
  auto r = c.Get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(Json::parse(r->body)["error"]["code"], "invalid_api_key");
  r = c.Get("/v1/models", {{"Authorization", "Bearer wrong"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = c.Get("/v1/models", {{"Authorization", "Bearer secret"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Json::parse(r->body)["data"][0]["id"], "tiny");
  r = c.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, FullQueueAnswers429WithRetryAfter) {
  StartServer({}, /*max_queue=*/1);
  ASSERT_TRUE(server_->SetReady(served_).ok());
  // Many concurrent long requests against a queue of one: some must be refused with 429,
  // the rest complete; the server stays healthy.
  std::vector<std::thread> threads;
  std::atomic<int> ok{0}, refused{0}, other{0};
  for (int i = 0; i < 12; ++i) {
    threads.emplace_back([&, i] {
      auto c = Client();
      const std::string body = R"({"prompt":"Request )" + std::to_string(i) +
                               R"(","max_tokens":64,"ignore_eos":true,"temperature":0})";
      auto r = c.Post("/v1/completions", body, "application/json");
      if (r && r->status == 200) {
        ++ok;
      } else if (r && r->status == 429 && r->get_header_value("Retry-After") == "1") {
        ++refused;
      } else {
        ++other;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GT(ok.load(), 0);
  EXPECT_GT(refused.load(), 0);
  EXPECT_EQ(other.load(), 0);
  auto r = Client().Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, MetricsHaveGatewayNames) {
  StartServer({});
  ASSERT_TRUE(server_->SetReady(served_).ok());
  ASSERT_TRUE(Client().Get("/health"));
  // Counted by the logger, after the answer was written: the client may see the answer first.
  const std::string health = "jisu:http_requests_total{endpoint=\"/health\",status=\"200\"} 1";
  auto r = Client().Get("/metrics");
  for (int i = 0; i < 100 && r && r->body.find(health) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    r = Client().Get("/metrics");
  }
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find(health), std::string::npos) << r->body;
  for (const char* name : {"\nvllm:num_requests_running ", "\nvllm:num_requests_waiting ",
                           "\nvllm:gpu_cache_usage_perc ", "\nvllm:kv_cache_usage_perc ",
                           "\njisu:http_requests_total{", "\njisu:http_requests_in_flight "}) {
    EXPECT_NE(r->body.find(name), std::string::npos) << name;
  }
}

// Value of the sample `series` (name plus labels, exactly as rendered); -1 when absent.
double MetricValue(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const size_t pos = text.find(key);
  if (pos == std::string::npos) return -1;
  return std::strtod(text.c_str() + pos + key.size(), nullptr);
}

TEST_F(HttpServerTest, ServerCpuSecondsGrowWithRequests) {
  StartServer({});
  ASSERT_TRUE(server_->SetReady(served_).ok());
  auto c = Client();
  auto before = c.Get("/metrics");
  ASSERT_TRUE(before);
  auto stage = [](const char* s) {
    return std::string("jisu:server_cpu_seconds_total{stage=\"") + s + "\"}";
  };
  for (const char* s :
       {"http", "parse", "prepare", "submit", "wait", "stream", "write", "respond", "other"}) {
    EXPECT_GE(MetricValue(before->body, stage(s)), 0) << s << "\n" << before->body;
  }
  const double process_before = MetricValue(before->body, "process_cpu_seconds_total");
  EXPECT_GT(process_before, 0);
  for (int i = 0; i < 4; ++i) {
    auto r = c.Post("/v1/completions",
                    R"({"prompt":"Hello","max_tokens":8,"temperature":0,"ignore_eos":true,
                        "stream":true})",
                    "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
  }
  auto whole = c.Post("/v1/chat/completions",
                      R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,
                          "ignore_eos":true})",
                      "application/json");
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200);
  // Per-thread CPU clocks tick in nanoseconds; every stage a request passed through grew. The
  // "respond" stage is booked after the answer is on the wire, so the client can read /metrics
  // before the last request's share lands: poll for it.
  const char* kStages[] = {"http", "parse", "prepare", "submit", "stream", "write", "respond"};
  auto after = c.Get("/metrics");
  ASSERT_TRUE(after);
  for (int tries = 0; tries < 100; ++tries) {
    bool all = true;
    for (const char* s : kStages) {
      all = all && MetricValue(after->body, stage(s)) > MetricValue(before->body, stage(s));
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    after = c.Get("/metrics");
    ASSERT_TRUE(after);
  }
  for (const char* s : kStages) {
    EXPECT_GT(MetricValue(after->body, stage(s)), MetricValue(before->body, stage(s))) << s;
  }
  EXPECT_GT(MetricValue(after->body, "process_cpu_seconds_total"), process_before);
  // The engine's busy time, the denominator of the overhead ratio, is exported too.
  EXPECT_GT(MetricValue(after->body, "jisu:step_duration_seconds_sum"), 0);
}

// A non-streaming request whose client hangs up is cancelled (its KV blocks freed) long before
// its 16 x 480 tokens could have been generated.
TEST_F(HttpServerTest, NonStreamingRequestCancelledWhenClientDisconnects) {
  StartServer({});
  ASSERT_TRUE(server_->SetReady(served_).ok());
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string body =
      R"({"prompt":"Hello","max_tokens":480,"n":16,"ignore_eos":true,"temperature":0})";
  const std::string request =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  auto c = Client();
  // Wait until the 16 choices run, then hang up.
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    auto m = c.Get("/metrics");
    ASSERT_TRUE(m);
    if (MetricValue(m->body, "vllm:num_requests_running") >= 16) break;
    ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10)) << m->body;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  close(fd);
  const auto t1 = std::chrono::steady_clock::now();
  double cancelled = 0, generated = 0;
  while (std::chrono::steady_clock::now() - t1 < std::chrono::seconds(20)) {
    auto m = c.Get("/metrics");
    ASSERT_TRUE(m);
    cancelled = MetricValue(m->body, "jisu:requests_finished_total{finished_reason=\"cancelled\"}");
    generated = MetricValue(m->body, "vllm:generation_tokens_total");
    if (cancelled >= 16 && MetricValue(m->body, "jisu:kv_blocks_in_use") == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(cancelled, 16);
  EXPECT_LT(generated, 16 * 480);
  EXPECT_EQ(server_->num_in_flight(), 0);
}

TEST_F(HttpServerTest, ShutdownRefusesNewWorkAndReturns) {
  StartServer({});
  ASSERT_TRUE(server_->SetReady(served_).ok());
  std::thread t([&] {
    auto r =
        Client().Post("/v1/completions", R"({"prompt":"x","max_tokens":64,"ignore_eos":true})",
                      "application/json");
    ASSERT_TRUE(r);
    // In flight at the signal: finished during the drain. 64 tokens keep it in flight past the
    // signal yet finish well inside the drain under ThreadSanitizer (400 took over 30 s).
    EXPECT_EQ(r->status, 200);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (server_->num_in_flight() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  server_->Shutdown(30);
  t.join();
  EXPECT_EQ(server_->num_in_flight(), 0);
  EXPECT_FALSE(Client().Get("/health"));  // no longer listening
  server_.reset();
}

}  // namespace
}  // namespace jisu::server
