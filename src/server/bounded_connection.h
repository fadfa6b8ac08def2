// A bound on a request's head (request line and headers) for Debian's cpp-httplib 0.11.4, which
// reads a line of any length into memory before it looks at it: one connection sending 256 MiB
// without a newline took 512 MiB. Upstream bounds lines only from 2025 on
// (CPPHTTPLIB_MAX_LINE_LENGTH); Debian 12 ships 0.11.4 as a shared library whose socket streams
// are internal, so these servers replace the library's connection loop (its
// process_and_close_socket is virtual) with the same loop over a stream of their own, and still
// let the library parse and route each request (process_request is protected).
//
// The stream counts what the library reads of a request until it has the headers (it then calls
// the setup_request hook given to process_request): past the bound the read is refused, the
// library's parse is abandoned unanswered and unlogged, the client is told 431 with
// Connection: close, and the connection ends. The library holds at most the bound of the head;
// the stream adds its 4 KiB read buffer (TLS: OpenSSL's one record). Bodies are not counted:
// set_payload_max_length and the body checks in http_server.cc bound them.
//
// Otherwise the loop keeps 0.11.4's semantics: the first and each next request is awaited for
// the keep-alive timeout, at most keep_alive_max_count requests per connection, the last one
// answered with Connection: close, reads and writes wait for their timeouts. Differences: a
// connection idle between requests ends as soon as the server stops, rather than at the end of
// its keep-alive wait; an answer that says "Connection: close" ends the connection (0.11.4 went
// on to parse what the client still sent, e.g. a refused body, as further requests), with a
// lingering close; bytes read past a request stay for the next one (0.11.4 dropped them, which
// broke pipelined requests).
#pragma once

#include <httplib.h>

#include <cstddef>
#include <functional>
#include <string>

namespace jisu::server {

struct HeadLimit {
  size_t max_bytes = 64u << 10;
  std::string refusal_json;          // body of the 431 answer (application/json)
  std::function<void()> on_refused;  // on the connection's thread, once the answer is sent
};

class BoundedServer : public httplib::Server {
 public:
  explicit BoundedServer(HeadLimit limit);

 private:
  bool process_and_close_socket(socket_t sock) override;

  HeadLimit limit_;
};

// HTTPS: the handshake and each read and write wait at most the server's timeouts.
class BoundedTlsServer : public httplib::SSLServer {
 public:
  BoundedTlsServer(HeadLimit limit, const std::function<bool(SSL_CTX& ctx)>& setup_ssl_ctx);

 private:
  bool process_and_close_socket(socket_t sock) override;

  HeadLimit limit_;
};

}  // namespace jisu::server
