// The client, runner and report against an in-process fake OpenAI server that streams fixed
// chunks with known delays: measured TTFT/TPOT must match the delays, and failures (a 500, a
// connection cut mid-stream, a stalled server) must be counted under the right kind.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "loadgen/client.h"
#include "loadgen/openai_stream.h"
#include "loadgen/report.h"
#include "loadgen/runner.h"

namespace jisu::loadgen {
namespace {

constexpr int kFirstDelayMs = 150;
constexpr int kTokenDelayMs = 30;
constexpr int kTokens = 8;

std::string Chunk(const std::string& content) {
  nlohmann::json j = {{"object", "chat.completion.chunk"},
                      {"choices", {{{"index", 0}, {"delta", {{"content", content}}}}}}};
  return "data: " + j.dump() + "\n\n";
}

class FakeServer {
 public:
  FakeServer() {
    server_.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"object":"list","data":[{"id":"fake-model","object":"model"}]})",
                      "application/json");
    });
    server_.Post("/v1/chat/completions", [](const httplib::Request& req, httplib::Response& res) {
      auto body = nlohmann::json::parse(req.body, nullptr, false);
      const std::string model = body.value("model", "");
      if (model == "fail500") {
        res.status = 500;
        res.set_content(R"({"error":{"message":"boom","type":"server_error"}})",
                        "application/json");
        return;
      }
      const bool cut = model == "cut";
      const bool stall = model == "stall";
      res.set_chunked_content_provider(
          "text/event-stream", [cut, stall](size_t, httplib::DataSink& sink) {
            if (stall) {
              std::this_thread::sleep_for(std::chrono::milliseconds(1500));
              return false;
            }
            // A role-only first chunk, as OpenAI and vLLM send: not a token.
            std::string role =
                R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})";
            role += "\n\n";
            sink.write(role.data(), role.size());
            std::this_thread::sleep_for(std::chrono::milliseconds(kFirstDelayMs));
            for (int i = 0; i < kTokens; ++i) {
              if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(kTokenDelayMs));
              std::string c = Chunk("tok" + std::to_string(i));
              sink.write(c.data(), c.size());
              if (cut && i == 2) return false;  // drop the connection mid-stream
            }
            std::string tail =
                R"(data: {"choices":[],"usage":{"prompt_tokens":17,"completion_tokens":8,)"
                R"("prompt_tokens_details":{"cached_tokens":16}}})"
                "\n\ndata: [DONE]\n\n";
            sink.write(tail.data(), tail.size());
            sink.done();
            return true;
          });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // The socket listens from bind on; connections queue until the accept loop runs.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeServer() {
    server_.stop();
    thread_.join();
  }
  ClientOptions Options() const {
    ClientOptions o;
    o.base.host = "127.0.0.1";
    o.base.port = port_;
    o.base.prefix = "/v1";
    o.timeout_s = 10;
    return o;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

std::string Body(const std::string& model) {
  return nlohmann::json({{"model", model},
                         {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                         {"stream", true}})
      .dump();
}

TEST(LoadgenE2E, MeasuresTtftTpotAndCountsErrors) {
  FakeServer server;
  ClientOptions options = server.Options();
  auto model = FetchFirstModelId(options);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(*model, "fake-model");

  // 4 good requests, one 500, one cut mid-stream; all concurrent.
  const std::vector<std::string> models = {"fake-model", "fail500",    "fake-model",
                                           "cut",        "fake-model", "fake-model"};
  RunOptions run;
  run.max_concurrency = 6;
  RunOutcome out = RunLoad(models.size(), run, [&](size_t i) {
    return SendStreaming(options, "/chat/completions", Body(models[i]));
  });
  ASSERT_EQ(out.results.size(), models.size());
  Report rep = BuildReport(out.results, out.wall_s, Slo{});
  EXPECT_EQ(rep.completed, 4u);
  EXPECT_EQ(rep.failed, 2u);
  EXPECT_EQ(rep.errors["http_500"], 1u);
  EXPECT_EQ(rep.errors["broken_stream"], 1u);
  EXPECT_EQ(out.results[1].error_message, "boom");
  EXPECT_EQ(rep.output_tokens, 4 * kTokens);
  EXPECT_EQ(rep.input_tokens, 4 * 17);
  EXPECT_EQ(rep.cached_tokens, 4 * 16);
  EXPECT_TRUE(rep.usage_reported);
  EXPECT_EQ(out.results[0].content_chunks, kTokens);

  // Known delays: TTFT = 150 ms, TPOT = ITL = 30 ms. Lower bounds are tight (sleeps never run
  // short); upper bounds leave room for a loaded 2-core machine.
  for (const RequestResult& r : out.results) {
    if (!r.ok()) continue;
    EXPECT_GE(r.ttft_s * 1e3, kFirstDelayMs - 2);
    EXPECT_LE(r.ttft_s * 1e3, kFirstDelayMs + 80);
  }
  EXPECT_GE(rep.tpot_ms.mean, kTokenDelayMs - 2);
  EXPECT_LE(rep.tpot_ms.mean, kTokenDelayMs + 15);
  EXPECT_GE(rep.itl_ms.p50, kTokenDelayMs - 2);
  EXPECT_LE(rep.itl_ms.p50, kTokenDelayMs + 15);
  EXPECT_EQ(rep.itl_ms.count, 4u * (kTokens - 1));
  const double e2e = kFirstDelayMs + (kTokens - 1) * kTokenDelayMs;
  EXPECT_GE(rep.e2e_ms.p50, e2e - 2);
  EXPECT_LE(rep.e2e_ms.p50, e2e + 100);
  // SLO: TTFT 150 ms fails a 100 ms TTFT target, passes 1 s.
  EXPECT_EQ(BuildReport(out.results, out.wall_s, Slo{100, 100}).good, 0u);
  EXPECT_EQ(BuildReport(out.results, out.wall_s, Slo{1000, 100}).good, 4u);
  EXPECT_EQ(BuildReport(out.results, out.wall_s, Slo{1000, 10}).good, 0u);
}

TEST(LoadgenE2E, TimeoutAndRefusedConnection) {
  FakeServer server;
  ClientOptions options = server.Options();
  options.timeout_s = 0.4;
  RequestResult r = SendStreaming(options, "/chat/completions", Body("stall"));
  EXPECT_EQ(r.error, ErrorKind::kTimeout) << ErrorKey(r) << " " << r.error_message;
  EXPECT_LT(r.e2e_s, 1.2);

  // Nothing listens on the port of a stopped server.
  int dead_port = 0;
  {
    // Bound, never listening, then closed: connecting to it is refused.
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    dead_port = ntohs(addr.sin_port);
    ::close(fd);
  }
  ClientOptions dead = options;
  dead.base.port = dead_port;
  RequestResult c = SendStreaming(dead, "/chat/completions", Body("x"));
  EXPECT_EQ(c.error, ErrorKind::kConnection) << ErrorKey(c) << " " << c.error_message;
}

TEST(LoadgenStream, CompletionsTextUsageAndInStreamError) {
  RequestResult r;
  OpenAiStreamReader reader(&r);
  reader.OnEvent(R"({"choices":[{"index":0,"text":""}]})", 0.1);  // empty: not a token
  EXPECT_LT(r.ttft_s, 0);
  reader.OnEvent(R"({"choices":[{"index":0,"text":" Hello"}]})", 0.2);
  reader.OnEvent(R"({"choices":[{"index":0,"text":" world"}],"usage":null})", 0.3);
  reader.OnEvent(R"({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3}})", 0.3);
  reader.OnEvent("[DONE]", 0.3);
  EXPECT_TRUE(reader.done());
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.2);
  EXPECT_EQ(r.content_chunks, 2);
  EXPECT_EQ(r.output_tokens(), 3);  // usage wins over the chunk count
  EXPECT_EQ(r.prompt_tokens, 5);
  EXPECT_TRUE(r.ok());

  RequestResult e;
  OpenAiStreamReader bad(&e);
  bad.OnEvent(R"({"error":{"message":"context length exceeded","code":400}})", 0.1);
  EXPECT_EQ(e.error, ErrorKind::kStreamError);
  EXPECT_EQ(e.error_message, "context length exceeded");
  RequestResult g;
  OpenAiStreamReader garbage(&g);
  garbage.OnEvent("{not json", 0.1);
  EXPECT_EQ(g.error, ErrorKind::kBadResponse);
}

TEST(LoadgenClient, ParseBaseUrl) {
  auto a = ParseBaseUrl("http://127.0.0.1:8080");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8080);
  EXPECT_EQ(a->prefix, "/v1");
  auto b = ParseBaseUrl("http://localhost:9000/v1/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->prefix, "/v1");
  auto c = ParseBaseUrl("http://example.org/api");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port, 80);
  EXPECT_EQ(c->prefix, "/api/v1");
  auto d = ParseBaseUrl("https://api.example.com/v1");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->tls);
  EXPECT_EQ(d->port, 443);
  EXPECT_EQ(d->prefix, "/v1");
  auto e = ParseBaseUrl("https://[::1]:8443");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, 8443);
  EXPECT_FALSE(a->tls);
  EXPECT_FALSE(ParseBaseUrl("ftp://x").ok());
  EXPECT_FALSE(ParseBaseUrl("http://[::1").ok());
  EXPECT_FALSE(ParseBaseUrl("http://[::1]x").ok());
  EXPECT_FALSE(ParseBaseUrl("http://h:").ok());
  EXPECT_FALSE(ParseBaseUrl("127.0.0.1:80").ok());
  EXPECT_FALSE(ParseBaseUrl("http://h:99999").ok());
  EXPECT_FALSE(ParseBaseUrl("http://h:x").ok());
}

}  // namespace
}  // namespace jisu::loadgen
