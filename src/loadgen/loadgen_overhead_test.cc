// Measurement overhead of the thread-per-request client at ~300 concurrent streams: a fake
// server streams with known delays, and the figures printed are how far the measured TTFT and
// inter-token latency sit above them. A benchmark run by hand, not a timed test:
//   ./build/jisu_tests --gtest_also_run_disabled_tests --gtest_filter='*LoadgenOverhead*'
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/select.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "loadgen/client.h"
#include "loadgen/report.h"
#include "loadgen/runner.h"

namespace jisu::loadgen {
namespace {

constexpr int kStreams = 300, kTokens = 50, kFirstMs = 200, kGapMs = 20;

// cpp-httplib 0.11.4 listens with a backlog of 5, so a burst of 300 connects is partly reset
// or retried after 1 s by the kernel: a fake-server artefact that would be charged to the
// client. Linux accepts a second listen() on the bound socket with a larger backlog.
void WidenBacklog(int port) {
  for (int fd = 0; fd < FD_SETSIZE; ++fd) {
    int on = 0;
    socklen_t len = sizeof on;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) != 0 || !on) continue;
    sockaddr_in addr{};
    socklen_t alen = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) == 0 &&
        addr.sin_family == AF_INET && ntohs(addr.sin_port) == port) {
      ::listen(fd, 1024);
    }
  }
}

TEST(LoadgenOverhead, DISABLED_ThreeHundredStreams) {
  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(kStreams + 16); };
  server.Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
      // Absolute deadlines, so the server's own scheduling delay does not accumulate.
      auto t = std::chrono::steady_clock::now() + std::chrono::milliseconds(kFirstMs);
      const std::string chunk =
          "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n";
      for (int i = 0; i < kTokens; ++i) {
        std::this_thread::sleep_until(t);
        sink.write(chunk.data(), chunk.size());
        t += std::chrono::milliseconds(kGapMs);
      }
      const std::string tail = "data: [DONE]\n\n";
      sink.write(tail.data(), tail.size());
      sink.done();
      return true;
    });
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  WidenBacklog(port);
  std::thread listener([&] { server.listen_after_bind(); });
  ClientOptions o;
  o.base = {false, "127.0.0.1", port, "/v1"};
  o.timeout_s = 60;
  RunOptions run;
  run.max_concurrency = kStreams;
  RunOutcome out = RunLoad(kStreams, run, [&](size_t) {
    return SendStreaming(o, "/chat/completions", R"({"model":"m","stream":true})");
  });
  server.stop();
  listener.join();
  Report r = BuildReport(out.results, out.wall_s, Slo{});
  std::printf("%d streams x %d chunks: %zu ok, %zu failed\n", kStreams, kTokens, r.completed,
              r.failed);
  std::printf("TTFT - %d ms: p50 %.2f p90 %.2f p99 %.2f max %.2f ms\n", kFirstMs,
              r.ttft_ms.p50 - kFirstMs, r.ttft_ms.p90 - kFirstMs, r.ttft_ms.p99 - kFirstMs,
              r.ttft_ms.max - kFirstMs);
  std::printf("ITL - %d ms: p50 %.2f p90 %.2f p99 %.2f ms; TPOT mean %.2f ms\n", kGapMs,
              r.itl_ms.p50 - kGapMs, r.itl_ms.p90 - kGapMs, r.itl_ms.p99 - kGapMs, r.tpot_ms.mean);
  EXPECT_EQ(r.failed, 0u);
}

}  // namespace
}  // namespace jisu::loadgen
