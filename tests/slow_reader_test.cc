// Slow readers (issue 37): clients that read a streamed answer 16 bytes a second, through raw
// sockets with a 16 KiB receive buffer, against the server in process (the write timeout is a
// ServerOptions field: 1 s here, 30 s by default, no CLI flag). What the server promises:
// - A slow reader costs nothing but kernel socket memory: the engine generates its answer at
//   full speed, the server writes it into the socket's send buffer (which Linux grows up to
//   net.ipv4.tcp_wmem's max, 4 MiB by default) and lets the request go, so its KV blocks,
//   engine slot and connection thread are freed long before the reader is done; the reader
//   still gets the whole, intact stream at its own pace.
// - An answer larger than those buffers, read too slowly: once the send buffer stays full for
//   the write timeout, the write fails, the request is cancelled (every choice counted under
//   finished_reason="cancelled") and its KV blocks freed; the client sees the stream end
//   without "data: [DONE]", so it knows the answer was cut short.
// - Normal clients are served meanwhile at their usual latency, give or take the engine's
//   extra batch work (bound: (slow readers + 1) x their median alone + 1 s; a server that
//   made them wait for a slow reader would take the reader's minutes).
// The test's waits scale with a request's latency alone, so it holds under qemu-user too.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "server/http_server.h"
#include "tests/test_util.h"
#include "tests/tiny_llama_suite.h"

namespace jisu::server {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double MetricValue(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const size_t pos = text.find(key);
  if (pos == std::string::npos) return -1;
  return std::strtod(text.c_str() + pos + key.size(), nullptr);
}

// A client on a raw socket with a small receive buffer: sends one request, then reads as the
// test says.
class RawClient {
 public:
  // `timeout_s` bounds each read: a read that times out says the server neither sent nor closed.
  RawClient(int port, const std::string& body, const std::string& path, int timeout_s) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    // Small next to the answers (the kernel doubles it: 32 KiB), yet several segments: with
    // 1 KiB (2.3 KiB granted) the open window stays under the sender's segment size (576 bytes
    // here), silly-window avoidance holds the sender back, and the rest of a stream waits on
    // zero-window probes backed off to 2 minutes, however fast the reader later reads.
    const int rcvbuf = 16 << 10;
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    const timeval tv{timeout_s, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    const std::string request = "POST " + path +
                                " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                "Content-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
    ok_ =
        ok_ && send(fd_, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size());
  }
  ~RawClient() { close(fd_); }
  bool ok() const { return ok_; }

  // Reads at most `n` bytes (blocking); false at EOF or error.
  bool ReadSome(size_t n) {
    char buf[4096];
    const ssize_t got = recv(fd_, buf, std::min(n, sizeof buf), 0);
    if (got <= 0) {
      end_ = got == 0 ? "EOF" : std::string("error: ") + std::strerror(errno);
      return false;
    }
    data_.append(buf, static_cast<size_t>(got));
    return true;
  }
  void ReadToEnd() {
    // Drain what is buffered, then half-close: the FIN carries the now open receive window to
    // the server's kernel. After a long zero window Linux may send no window update of its own
    // (the opening is small next to the window last advertised), and the server's kernel would
    // wait for its next zero-window probe, backed off to as much as 2 minutes.
    char buf[4096];
    for (ssize_t got; (got = recv(fd_, buf, sizeof buf, MSG_DONTWAIT)) > 0;) {
      data_.append(buf, static_cast<size_t>(got));
    }
    shutdown(fd_, SHUT_WR);
    while (ReadSome(4096)) {
    }
  }
  const std::string& data() const { return data_; }
  // How the last read ended: "EOF", or the error (a timeout says the server neither sent nor
  // closed).
  const std::string& end() const { return end_; }

 private:
  int fd_ = -1;
  bool ok_ = false;
  std::string data_;
  std::string end_;
};

// The text of the completion events in a raw chunked SSE response (each event is one chunk, so
// the chunk-size lines between them can be skipped).
std::string StreamText(const std::string& raw) {
  std::string text;
  size_t pos = 0;
  while ((pos = raw.find("data: {", pos)) != std::string::npos) {
    const size_t end = raw.find("\n\n", pos);
    if (end == std::string::npos) break;
    const Json j = Json::parse(raw.substr(pos + 6, end - pos - 6), nullptr, false);
    if (!j.is_discarded() && !j["choices"].empty()) text += j["choices"][0]["text"];
    pos = end;
  }
  return text;
}

class SlowReaderTest : public testing::TinyLlamaSuite {
 protected:
  void SetUp() override {
    ServerOptions so;
    so.port = 0;
    so.write_timeout_s = 1;
    server_ = std::make_unique<HttpServer>(so);
    ASSERT_TRUE(server_->Start().ok());
    EngineOptions eo;
    eo.kv_blocks = 1024;
    eo.scheduler.block_size = 16;
    eo.scheduler.max_model_len = 1024;
    eo.scheduler.max_batch_tokens = 512;
    eo.num_threads = 2;
    auto e = Engine::Create(*model_, eo);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    ASSERT_TRUE(server_->SetReady(ServedModel{model_, engine_.get(), "tiny", 1024, 16, 1024}).ok());
    // The waits below are in units of this machine's speed: the latency of a normal request
    // alone (after a warm-up), ~0.05 s natively and seconds under qemu-user, where the suite
    // also runs. The promises stay the same; only how long the test waits for them scales.
    std::vector<double> alone;
    for (int i = 0; i < 4; ++i) alone.push_back(NormalRequest(-1 - i));
    std::sort(alone.begin() + 1, alone.end());
    ASSERT_GT(alone[1], 0);
    unit_s_ = alone[2];
  }
  // How long a client or the test waits: `base_s` on a native machine, more where a request
  // takes longer (emulation).
  double Wait(double base_s, double units) const { return base_s + units * unit_s_; }
  void TearDown() override {
    server_->Shutdown(5);
    server_.reset();
    engine_.reset();
  }

  httplib::Client Client() {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(static_cast<time_t>(Wait(60, 100)), 0);
    return c;
  }
  std::string Metrics() {
    auto r = Client().Get("/metrics");
    return r ? r->body : "";
  }
  // Latency of one normal (non-streamed, 16-token) request, or -1 if it failed.
  double NormalRequest(int i) {
    const auto t0 = Clock::now();
    auto r = Client().Post("/v1/completions",
                           R"({"prompt":"Normal client )" + std::to_string(i) +
                               R"(","max_tokens":16,"temperature":0,"ignore_eos":true})",
                           "application/json");
    if (!r || r->status != 200) return -1;
    return Seconds(t0);
  }

  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<Engine> engine_;
  double unit_s_ = 1;  // a normal request's latency alone, measured in SetUp
};

// Starts slow readers of `body` that read 16 bytes a second until `stop`.
struct SlowReaders {
  SlowReaders(int port, const std::string& path, const std::string& body, int n, int timeout_s) {
    for (int i = 0; i < n; ++i) {
      clients.push_back(std::make_unique<RawClient>(port, body, path, timeout_s));
      ok = ok && clients.back()->ok();
    }
    for (auto& c : clients) {
      threads.emplace_back([this, c = c.get()] {
        while (!stop) {
          if (!c->ReadSome(4)) return;
          std::this_thread::sleep_for(250ms);
        }
      });
    }
  }
  // Stops the slow reading: afterwards the clients' data may be read from this thread.
  void Stop() {
    stop = true;
    for (auto& t : threads) t.join();
    threads.clear();
  }
  // Stops the slow reading and reads what is left at full speed.
  void Finish() {
    Stop();
    for (auto& c : clients) c->ReadToEnd();
  }
  ~SlowReaders() {
    if (!threads.empty()) Finish();
  }
  bool ok = true;
  std::atomic<bool> stop{false};
  std::vector<std::unique_ptr<RawClient>> clients;
  std::vector<std::thread> threads;
};

TEST_F(SlowReaderTest, SlowReadersOfAnswersWithinTheSocketBuffersComplete) {
  constexpr int kSlow = 8, kNormal = 6;
  // ~400 events of ~170 bytes: far beyond the reader's receive buffer, within what the kernel
  // lets the server queue on a socket (net.ipv4.tcp_wmem, 4 MiB by default).
  const std::string body = R"({"prompt":"Slow reader says","max_tokens":400,"temperature":0,)"
                           R"("ignore_eos":true)";
  auto whole = Client().Post("/v1/completions", body + "}", "application/json");
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200);
  const std::string expected = Json::parse(whole->body)["choices"][0]["text"];
  std::vector<double> baseline;
  for (int i = 0; i < kNormal; ++i) baseline.push_back(NormalRequest(i));
  std::sort(baseline.begin(), baseline.end());
  ASSERT_GT(baseline[0], 0);
  // Sharing the engine's batch with the slow readers' requests may cost a normal request up to
  // a batch kSlow + 1 times as wide at each step: nothing where decoding is memory-bound (any
  // real CPU or GPU at this size), up to that factor where it is compute-bound (qemu-user).
  // Waiting for a slow reader would cost its minutes of reading instead.
  const double bound = (kSlow + 1) * baseline[kNormal / 2] + 1.0;
  const std::string finished_length = "jisu:requests_finished_total{finished_reason=\"length\"}";
  const double length_before = MetricValue(Metrics(), finished_length);

  const auto t0 = Clock::now();
  SlowReaders slow(server_->port(), "/v1/completions", body + R"(,"stream":true})", kSlow,
                   static_cast<int>(Wait(30, 50)));
  ASSERT_TRUE(slow.ok);
  // Normal clients meanwhile, while the slow readers' requests generate.
  std::vector<double> during;
  for (int i = 0; i < kNormal; ++i) during.push_back(NormalRequest(100 + i));
  // The server finishes the slow readers' requests (their bytes wait in the socket buffers):
  // no KV block, engine slot or connection thread stays with them.
  double finished = 0, blocks = -1;
  while (Seconds(t0) < Wait(60, 400)) {
    const std::string m = Metrics();
    finished = MetricValue(m, finished_length) - length_before - kNormal;
    blocks = MetricValue(m, "jisu:kv_blocks_in_use");
    if (finished >= kSlow && blocks == 0 && server_->num_in_flight() == 0) break;
    std::this_thread::sleep_for(50ms);
  }
  const double server_done_after = Seconds(t0);
  slow.Stop();  // the reader threads append to data(): join them before looking
  size_t read_slowly = 0;
  for (auto& c : slow.clients) read_slowly = std::max(read_slowly, c->data().size());
  slow.Finish();
  int completed = 0, lost = 0, corrupted = 0;
  for (auto& c : slow.clients) {
    const bool done = c->data().find("data: [DONE]") != std::string::npos;
    ++(done ? completed : lost);
    if (!done) {
      std::printf("  lost: %zu bytes, read ended by %s, tail %s\n", c->data().size(),
                  c->end().c_str(), c->data().substr(c->data().size() - 60).c_str());
    }
    corrupted += done && StreamText(c->data()) != expected;
  }
  std::sort(during.begin(), during.end());
  int normal_lost = 0, over_bound = 0;
  for (double s : during) {
    normal_lost += s < 0;
    over_bound += s > bound;
  }
  std::printf(
      "  [slow_readers] %d slow readers: completed %d, lost %d, corrupted %d (server done after "
      "%.1fs, when each had read <= %zu bytes); %d normal: lost %d, latency median %.3fs max "
      "%.3fs (alone: median %.3fs; bound %.3fs), over bound %d; kv blocks in use %.0f\n",
      kSlow, completed, lost, corrupted, server_done_after, read_slowly, kNormal, normal_lost,
      during[kNormal / 2], during.back(), baseline[kNormal / 2], bound, over_bound, blocks);
  EXPECT_EQ(finished, kSlow);
  EXPECT_EQ(blocks, 0);
  EXPECT_EQ(server_->num_in_flight(), 0);
  // The server was done long before the readers: natively when they had read a few hundred
  // bytes of ~70 KB; where generating takes minutes (emulation, sanitizers on loaded cores),
  // within their first quarter. The machine counts as native only if both measures of its
  // speed say so, SetUp's and this test's own (under ASan on CI's shared cores they once read
  // under 0.5 s and 0.85 s, and the readers had 2,508 bytes when the server was done at 157 s).
  for (auto& c : slow.clients) EXPECT_LT(read_slowly, c->data().size() / 4);
  if (std::max(unit_s_, baseline[kNormal / 2]) < 0.5) {
    EXPECT_LT(read_slowly, 2048u);
  }
  EXPECT_EQ(completed, kSlow);
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(corrupted, 0);
  EXPECT_EQ(normal_lost, 0);
  // Slow readers holding threads or the engine would slow every normal request; one request
  // over the bound is the machine (seen once: 1.57 s against 1.22 s on 2 cores shared with two
  // other test suites, median 0.375 s).
  EXPECT_LE(during[kNormal / 2], bound);
  EXPECT_LE(over_bound, 1);
}

uint64_t MaxSocketSendBuffer() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_wmem");
  uint64_t lo = 0, def = 0, hi = 0;
  in >> lo >> def >> hi;
  return hi;
}

TEST_F(SlowReaderTest, StalledReaderOfAnAnswerBeyondTheSocketBuffersIsCutOff) {
  constexpr int kStalled = 2, kChoices = 8;
  // A chat stream with 20 top logprobs a token carries ~1.7 KB per token per choice: size the
  // answer to twice what the kernel may queue on the server's socket.
  const uint64_t wmem_max = MaxSocketSendBuffer();
  const uint64_t tokens = (2 * wmem_max) / (kChoices * 1700) + 1;
  if (tokens > 1000) GTEST_SKIP() << "tcp_wmem max " << wmem_max << ": too large to fill here";
  const std::string body = R"({"messages":[{"role":"user","content":"Hi"}],"n":)" +
                           std::to_string(kChoices) +
                           R"(,"logprobs":true,"top_logprobs":20,"stream":true,"temperature":0,)"
                           R"("ignore_eos":true,"max_tokens":)" +
                           std::to_string(tokens) + "}";
  const std::string cancelled_series =
      "jisu:requests_finished_total{finished_reason=\"cancelled\"}";
  const double cancelled_before = MetricValue(Metrics(), cancelled_series);
  const auto t0 = Clock::now();
  SlowReaders stalled(server_->port(), "/v1/chat/completions", body, kStalled,
                      static_cast<int>(Wait(30, 50)));
  ASSERT_TRUE(stalled.ok);
  // Served meanwhile.
  int normal_lost = 0;
  double normal_max = 0;
  for (int i = 0; i < 3; ++i) {
    const double s = NormalRequest(200 + i);
    normal_lost += s < 0;
    normal_max = std::max(normal_max, s);
  }
  // Once a socket is full and stays full for the write timeout (1 s here), the write fails and
  // the request's choices are cancelled.
  double cancelled = 0, blocks = -1;
  while (Seconds(t0) < Wait(90, 400)) {
    const std::string m = Metrics();
    cancelled = MetricValue(m, cancelled_series) - cancelled_before;
    blocks = MetricValue(m, "jisu:kv_blocks_in_use");
    if (cancelled >= kStalled * kChoices && blocks == 0 && server_->num_in_flight() == 0) break;
    std::this_thread::sleep_for(50ms);
  }
  const double cut_after = Seconds(t0);
  stalled.Finish();
  int truncated = 0, completed = 0;
  size_t received = 0;
  for (auto& c : stalled.clients) {
    received = std::max(received, c->data().size());
    ++(c->data().find("data: [DONE]") != std::string::npos ? completed : truncated);
    EXPECT_EQ(c->data().rfind("HTTP/1.1 200", 0), 0u);
  }
  std::printf(
      "  [stalled_readers] %d readers of %llu tokens x %d choices: cut off %d (each got <= %zu "
      "bytes, ends without [DONE]), completed %d; choices cancelled %.0f; kv blocks in use %.0f; "
      "normal clients meanwhile: lost %d, max latency %.3fs; %.1fs\n",
      kStalled, static_cast<unsigned long long>(tokens), kChoices, truncated, received, completed,
      cancelled, blocks, normal_lost, normal_max, cut_after);
  EXPECT_EQ(truncated, kStalled);
  EXPECT_EQ(cancelled, kStalled * kChoices);
  EXPECT_EQ(blocks, 0);
  EXPECT_EQ(server_->num_in_flight(), 0);
  EXPECT_EQ(normal_lost, 0);
  auto health = Client().Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

}  // namespace
}  // namespace jisu::server
