// `jisu serve`'s HTTP front: the OpenAI-compatible API over one Engine, on cpp-httplib (thread
// per connection, the pool sized by max_connections). The server listens before the model is
// loaded so /health can say 503 until SetReady; generation requests are tokenized on the
// connection's thread and run by the engine's loop thread; streaming responses cancel their
// engine requests as soon as a write to the client fails. Who may call what, and as which
// tenant, is access_control.h's; with --tls-cert/--tls-key it serves HTTPS (tls_server.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "chat/chat_template.h"
#include "engine/engine.h"
#include "jisu/status.h"
#include "model/model.h"
#include "server/http_metrics.h"
#include "server/tools/tool_call_format.h"

namespace httplib {
class Server;
}

namespace jisu::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;            // 0 = any free port (see HttpServer::port())
  std::string api_key;        // --api-key: one key for every client; empty = none
  std::string api_keys_path;  // --api-keys: a keys file (api_keys.h); exclusive with api_key
  std::string prefix_cache_scope = "auto";  // auto, tenant or global (access_control.h)
  std::string tls_cert_path;                // --tls-cert and --tls-key: HTTPS (both or none)
  std::string tls_key_path;
  int max_connections = 512;
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 64u << 10;  // request line + headers; 431 beyond (bounded_connection.h)
  int read_timeout_s = 30;
  int write_timeout_s = 30;
  int keep_alive_timeout_s = 5;
  int keep_alive_max_requests = 1000;
  Status Validate() const;
};

// What the server serves once loading is done. The model and engine must outlive the server's
// use of them (until Stop returns).
struct ServedModel {
  const Model* model = nullptr;
  Engine* engine = nullptr;
  std::string name;           // "model" in requests and responses
  int64_t max_model_len = 0;  // prompt + completion tokens
  int64_t kv_block_size = 16;
  int64_t max_queue = 0;
  // How the model writes tool calls (DetectToolCallFormat of its template, or --tool-call-parser);
  // kNone: requests that need calls parsed are refused.
  ToolCallFormat tool_call_format = ToolCallFormat::kNone;
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();

  // Loads the keys file and the TLS certificate (errors name the flag and the file), binds the
  // listening socket (the port is known afterwards) and starts serving on a thread.
  Status Start();
  bool tls() const { return !options_.tls_cert_path.empty(); }
  int port() const { return port_; }

  // Makes the API available (/health turns 200). Parses the chat template once.
  Status SetReady(const ServedModel& served);

  // Graceful stop: answers new generation requests 503 (Retry-After) while in-flight requests
  // finish for up to `drain_seconds`, cancels the rest (each is told), answers the connections
  // still waiting for a thread, then stops listening and returns once every connection thread
  // is done.
  void Shutdown(double drain_seconds);

  int64_t num_in_flight() const;

 private:
  struct Impl;
  void Install();
  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  std::unique_ptr<Impl> impl_;
  std::thread listener_;
  int port_ = 0;
};

}  // namespace jisu::server
