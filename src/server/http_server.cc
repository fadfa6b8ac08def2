#include "server/http_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <ctime>

#include "server/access_control.h"
#include "server/body_framing.h"
#include "server/bounded_connection.h"
#include "server/connection_probe.h"
#include "server/generation_handler.h"
#include "server/openai_protocol.h"
#include "server/tls_server.h"
#include "server/tokenize_endpoint.h"

namespace jisu::server {

struct HttpServer::Impl {
  ServerOptions options;
  std::unique_ptr<AccessControl> access;
  HttpMetrics metrics;
  LiveRequests live;
  std::mutex mu;  // guards ready/draining transitions
  std::atomic<bool> ready{false};
  std::atomic<bool> draining{false};
  std::atomic<int64_t> in_flight{0};
  std::atomic<int64_t> queued_connections{0};  // accepted, waiting for a connection thread
  ServedModel served;
  std::unique_ptr<ChatTemplate> chat_template;
  GenerationContext ctx;
  int64_t created = static_cast<int64_t>(std::time(nullptr));
};

namespace {

// Bounded label set for the request counters.
std::string EndpointLabel(const std::string& path) {
  for (const char* known : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health",
                            "/metrics", "/tokenize", "/detokenize"}) {
    if (path == known) return known;
  }
  return "other";
}

ApiError Unavailable(const std::string& message) {
  ApiError e = ApiError::BadRequest(message);
  e.http_status = 503;
  e.type = "service_unavailable";
  return e;
}

// cpp-httplib listens with a backlog of 5 (compiled into Debian's library): a burst of
// hundreds of connects overflows it and clients see resets. Linux lets listen() be called
// again on a listening socket to change the backlog; find ours by its port.
void WidenListenBacklog(int port, int backlog) {
  for (int fd = 0; fd < FD_SETSIZE; ++fd) {
    int listening = 0;
    socklen_t len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) continue;
    sockaddr_storage addr{};
    socklen_t alen = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
    int p = -1;
    if (addr.ss_family == AF_INET) p = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    if (addr.ss_family == AF_INET6) p = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    if (p == port) ::listen(fd, backlog);
  }
}

// cpp-httplib's thread pool, counting the connections accepted but not yet taken by a thread.
// Once cpp-httplib stops listening it closes those unanswered (their requests sent, no reply),
// so Shutdown keeps listening until they have been answered.
class CountingPool final : public httplib::TaskQueue {
 public:
  CountingPool(size_t threads, std::atomic<int64_t>* queued) : pool_(threads), queued_(queued) {}
  void enqueue(std::function<void()> fn) override {
    queued_->fetch_add(1);
    pool_.enqueue([queued = queued_, fn = std::move(fn)] {
      queued->fetch_sub(1);
      fn();
    });
  }
  void shutdown() override { pool_.shutdown(); }

 private:
  httplib::ThreadPool pool_;
  std::atomic<int64_t>* queued_;
};

}  // namespace

Status ServerOptions::Validate() const {
  if (port < 0 || port > 65535) return Status::InvalidArgument("--port must be in [0, 65535]");
  // cpp-httplib waits on sockets with select(): descriptors must stay below FD_SETSIZE.
  if (max_connections < 1 || max_connections > 900) {
    return Status::InvalidArgument("--max-connections must be in [1, 900]");
  }
  if (max_body_bytes < 1024) return Status::InvalidArgument("--max-body-bytes must be >= 1024");
  if (max_header_bytes < 1024) {
    return Status::InvalidArgument("--max-header-bytes must be >= 1024");
  }
  if (read_timeout_s < 1 || write_timeout_s < 1 || keep_alive_timeout_s < 1) {
    return Status::InvalidArgument("timeouts must be >= 1 second");
  }
  if (keep_alive_max_requests < 1) {
    return Status::InvalidArgument("keep-alive request count must be >= 1");
  }
  if (tls_cert_path.empty() != tls_key_path.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together");
  }
  return Status::Ok();
}

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>()) {
  impl_->options = options_;
}

HttpServer::~HttpServer() {
  if (listener_.joinable()) Shutdown(0);
}

int64_t HttpServer::num_in_flight() const { return impl_->in_flight.load(); }

void HttpServer::Install() {
  Impl* impl = impl_.get();
  httplib::Server& svr = *http_;
  const size_t threads = static_cast<size_t>(options_.max_connections);
  svr.new_task_queue = [threads, impl] {
    return new CountingPool(threads, &impl->queued_connections);
  };
  svr.set_payload_max_length(options_.max_body_bytes);
  svr.set_read_timeout(options_.read_timeout_s, 0);
  svr.set_write_timeout(options_.write_timeout_s, 0);
  svr.set_keep_alive_timeout(options_.keep_alive_timeout_s);
  svr.set_keep_alive_max_count(static_cast<size_t>(options_.keep_alive_max_requests));

  // Bodies cpp-httplib would read without bound are refused before they are read: at the
  // "Expect: 100-continue" handshake when the client waits for one (it then sends nothing),
  // else once the headers are in.
  const size_t max_body = options_.max_body_bytes;
  svr.set_expect_100_continue_handler(
      [max_body](const httplib::Request& req, httplib::Response& res) {
        auto refused = CheckBodyFraming(req);
        if (!refused && req.get_header_value<uint64_t>("Content-Length") > max_body) {
          refused = ApiError::BadRequest("the request body is too large");
          refused->http_status = 413;
        }
        if (!refused) return 100;
        SetError(res, *refused);
        return refused->http_status;
      });
  svr.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    ServerCpu::Charge(CpuStage::kHttp);  // reading the request line and headers
    auto refused = CheckBodyFraming(req);
    if (!refused) return httplib::Server::HandlerResponse::Unhandled;
    SetError(res, *refused);
    // The body is not read: the connection ends after the answer (bounded_connection.h).
    res.set_header("Connection", "close");
    return httplib::Server::HandlerResponse::Handled;
  });
  // Errors cpp-httplib produces itself (unknown path, body too large, bad request line) get
  // OpenAI's shape too.
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ApiError e = ApiError::BadRequest("");
    e.http_status = res.status;
    if (res.status == 404) {
      e.message = "no such endpoint: " + req.method + " " + req.path;
      e.code = "not_found";
    } else if (res.status == 413) {
      e.message = "the request body is too large";
      if (req.get_header_value("Content-Type").find("form-urlencoded") != std::string::npos) {
        e.message += " for a form (8 KiB); send Content-Type: application/json";
      }
    } else {
      e.message = "HTTP error " + std::to_string(res.status);
    }
    res.set_content(e.ToJson().dump() + "\n", "application/json");
  });
  // While draining, every answer ends its connection: an idle keep-alive connection would
  // hold Shutdown for the keep-alive timeout.
  svr.set_post_routing_handler([impl](const httplib::Request&, httplib::Response& res) {
    if (impl->draining) res.set_header("Connection", "close");
  });
  // Runs after the response was written, on the connection's thread.
  svr.set_logger([impl](const httplib::Request& req, const httplib::Response& res) {
    const std::string endpoint = EndpointLabel(req.path);
    impl->metrics.CountRequest(endpoint, res.status);
    const bool generation = endpoint == "/v1/chat/completions" || endpoint == "/v1/completions";
    impl->metrics.cpu().ChargeAndFlush(generation ? CpuStage::kWrite : CpuStage::kOther);
  });

  svr.Get("/health", [impl](const httplib::Request&, httplib::Response& res) {
    if (!impl->ready || impl->draining) {
      res.status = 503;
      res.set_content(impl->draining ? "draining\n" : "loading\n", "text/plain");
      return;
    }
    res.set_content("ok\n", "text/plain");
  });
  svr.Get("/metrics", [impl](const httplib::Request& req, httplib::Response& res) {
    if (auto no = impl->access->Authorize(req.get_header_value("Authorization"), true)) {
      return SetRefusal(res, *no);
    }
    res.set_content(impl->metrics.Render(impl->in_flight.load()), MetricsRegistry::kContentType);
  });
  svr.Get("/v1/models", [impl](const httplib::Request& req, httplib::Response& res) {
    if (auto no = impl->access->Authorize(req.get_header_value("Authorization"), false)) {
      return SetRefusal(res, *no);
    }
    if (!impl->ready) return SetError(res, Unavailable("the model is still loading"));
    nlohmann::json model = {{"id", impl->served.name},
                            {"object", "model"},
                            {"created", impl->created},
                            {"owned_by", "jisu"},
                            {"max_model_len", impl->served.max_model_len}};
    res.set_content(nlohmann::json{{"object", "list"}, {"data", {model}}}.dump() + "\n",
                    "application/json");
  });
  auto generation = [impl](Endpoint endpoint) {
    return [impl, endpoint](const httplib::Request& req, httplib::Response& res) {
      if (!impl->ready) return SetError(res, Unavailable("the model is still loading"));
      if (impl->draining) return SetError(res, Unavailable("the server is shutting down"));
      HandleGeneration(req, res, endpoint, impl->ctx);
    };
  };
  svr.Post("/v1/chat/completions", generation(Endpoint::kChat));
  svr.Post("/v1/completions", generation(Endpoint::kCompletion));
  auto tokenizer = [impl](void (*handle)(const httplib::Request&, httplib::Response&,
                                         const GenerationContext&)) {
    return [impl, handle](const httplib::Request& req, httplib::Response& res) {
      // Any key of the API may count tokens (as for /v1/models); no tenant's limits are taken.
      if (auto no = impl->access->Authorize(req.get_header_value("Authorization"), false)) {
        return SetRefusal(res, *no);
      }
      if (!impl->ready) return SetError(res, Unavailable("the model is still loading"));
      handle(req, res, impl->ctx);
    };
  };
  svr.Post("/tokenize", tokenizer(&HandleTokenize));
  svr.Post("/detokenize", tokenizer(&HandleDetokenize));
}

Status HttpServer::Start() {
  JISU_RETURN_IF_ERROR(options_.Validate());
  AccessOptions access;
  access.api_key = options_.api_key;
  access.api_keys_path = options_.api_keys_path;
  access.cache_scope = options_.prefix_cache_scope;
  JISU_ASSIGN_OR_RETURN(impl_->access, AccessControl::Create(access));
  impl_->ctx.access = impl_->access.get();
  HeadLimit head;
  head.max_bytes = options_.max_header_bytes;
  ApiError too_large =
      ApiError::BadRequest("the request line and headers are larger than " +
                           std::to_string(head.max_bytes) + " bytes (--max-header-bytes)");
  too_large.http_status = 431;
  head.refusal_json = too_large.ToJson().dump() + "\n";
  Impl* impl = impl_.get();
  head.on_refused = [impl] {
    impl->metrics.CountRequest("other", 431);
    impl->metrics.cpu().ChargeAndFlush(CpuStage::kHttp);
  };
  if (tls()) {
    JISU_ASSIGN_OR_RETURN(http_,
                          MakeTlsServer(options_.tls_cert_path, options_.tls_key_path, head));
  } else {
    http_ = std::make_unique<BoundedServer>(std::move(head));
  }
  Install();
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
    if (port_ <= 0) return Status::IoError("cannot bind to " + options_.host);
  } else {
    if (!http_->bind_to_port(options_.host, options_.port)) {
      return Status::IoError("cannot bind to " + options_.host + ":" +
                             std::to_string(options_.port) + " (in use, or no permission)");
    }
    port_ = options_.port;
  }
  WidenListenBacklog(port_, 1024);
  listener_ = std::thread([this] { http_->listen_after_bind(); });
  return Status::Ok();
}

Status HttpServer::SetReady(const ServedModel& served) {
  if (!served.model || !served.engine) return Status::InvalidArgument("no model or engine");
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->served = served;
  if (!served.model->chat_template().empty()) {
    auto tmpl = ChatTemplate::Parse(served.model->chat_template());
    if (!tmpl.ok()) return tmpl.status().WithContext("model chat template");
    impl_->chat_template = std::move(*tmpl);
  }
  impl_->ctx.served = &impl_->served;
  impl_->ctx.chat_template = impl_->chat_template.get();
  impl_->ctx.tool_format = served.tool_call_format;
  impl_->ctx.tool_syntax = DetectMistralCallSyntax(served.model->chat_template());
  impl_->ctx.metrics = &impl_->metrics;
  impl_->metrics.Attach(served.engine);
  impl_->ctx.live = &impl_->live;
  impl_->ctx.in_flight = &impl_->in_flight;
  impl_->ready = true;
  return Status::Ok();
}

void HttpServer::Shutdown(double drain_seconds) {
  impl_->draining = true;  // new generation requests get 503, /health 503
  if (!http_) return;      // never started
  // Still listening through the drain: a connection that waits for a thread gets its 503 once
  // one is free, where stopping first would close it unanswered.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(0.0, drain_seconds));
  while (impl_->in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (impl_->ready && impl_->in_flight.load() > 0) impl_->live.CancelAll(impl_->served.engine);
  // The cancelled requests are told at once, which frees their threads for the queued
  // connections; a few seconds bound the wait should clients keep connecting.
  const auto answered = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (impl_->queued_connections.load() > 0 && std::chrono::steady_clock::now() < answered) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  http_->stop();                               // closes the listening socket
  if (listener_.joinable()) listener_.join();  // joins the connection threads
}

}  // namespace jisu::server
