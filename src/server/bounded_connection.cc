#include "server/bounded_connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <utility>

namespace jisu::server {
namespace {

using Clock = std::chrono::steady_clock;

// Thrown by a read past the bound and caught by ServeRequests. It unwinds through the library's
// line reader and process_request (built with exceptions; only locals on the way), so that the
// library neither answers the request it could not read (it would say 400) nor logs it.
struct HeadTooLarge {};

int Millis(time_t sec, time_t usec) { return static_cast<int>(sec * 1000 + usec / 1000); }

int MillisLeft(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// True when `fd` is ready for `events` (or in error, as select() says) within `timeout_ms`.
bool WaitFor(int fd, short events, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, timeout_ms);
    if (r >= 0) return r > 0;
    if (errno != EINTR) return false;
    timeout_ms = MillisLeft(deadline);
  }
}

// cpp-httplib's is_socket_alive: a peer that has sent its FIN (or reset) is gone, one with
// unread bytes (a pipelined request) is there.
bool PeerStillThere(int fd) {
  pollfd p{fd, POLLIN, 0};
  int r;
  while ((r = poll(&p, 1, 0)) < 0 && errno == EINTR) {
  }
  if (r == 0) return true;
  if (r < 0 || (p.revents & POLLNVAL)) return false;
  char c;
  return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

// The text cpp-httplib puts in Request::remote_addr and local_addr (ConnectionProbe and the
// rate limiter compare against it).
void IpAndPort(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port) {
  if (addr.ss_family == AF_INET) {
    port = ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    port = ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  } else {
    return;
  }
  char host[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, nullptr, 0,
                  NI_NUMERICHOST) == 0) {
    ip = host;
  }
}

class ConnectionStream : public httplib::Stream {
 public:
  ConnectionStream(int fd, int read_ms, int write_ms, size_t max_head)
      : fd_(fd), read_ms_(read_ms), write_ms_(write_ms), max_head_(max_head) {}

  // A request begins: its head is counted from here until EndHead.
  void StartRequest() {
    head_bytes_ = 0;
    in_head_ = true;
    answer_head_.clear();
    in_answer_head_ = true;
    closes_ = false;
  }
  void EndHead() { in_head_ = false; }

  // cpp-httplib's wait for a request (the first or a kept-alive next one), which also ends as
  // soon as the server stops listening.
  bool AwaitRequest(time_t keep_alive_s, const std::atomic<socket_t>& listening) const {
    const auto deadline = Clock::now() + std::chrono::seconds(keep_alive_s);
    while (listening != INVALID_SOCKET) {
      if (Buffered()) return true;
      const int left = MillisLeft(deadline);
      if (left == 0) return false;
      if (WaitFor(fd_, POLLIN, std::min(left, 50))) return true;
    }
    return false;
  }

  // Tells the client its head was too large and ends the connection.
  void Refuse(const HeadLimit& limit) {
    in_head_ = false;
    const std::string answer =
        "HTTP/1.1 431 Request Header Fields Too Large\r\n"
        "Content-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(limit.refusal_json.size()) + "\r\nConnection: close\r\n\r\n" +
        limit.refusal_json;
    size_t sent = 0;
    while (sent < answer.size()) {
      const ssize_t n = write(answer.data() + sent, answer.size() - sent);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    EndSending();
    if (sent != answer.size() || StillSendingAfterDrain()) CloseAbortively();
    if (limit.on_refused) limit.on_refused();
  }

  bool is_readable() const override { return Buffered() || WaitFor(fd_, POLLIN, read_ms_); }
  bool is_writable() const override {
    return WaitFor(fd_, POLLOUT, write_ms_) && PeerStillThere(fd_);
  }

  // The answer to this request said "Connection: close" (a handler's choice, e.g. a body refused
  // before it was read): the connection must end after it. 0.11.4 ends it only when the request
  // said so, and went on to read what the client still sent as a next request.
  bool AnswerCloses() const { return closes_; }

  // Ends a connection whose answer said "Connection: close" (a lingering close, see
  // StillSendingAfterDrain).
  void CloseAfterAnswer() {
    EndSending();
    if (StillSendingAfterDrain()) CloseAbortively();
  }

  ssize_t write(const char* ptr, size_t size) final {
    const ssize_t n = WriteSome(ptr, size);
    if (n > 0 && in_answer_head_) NoteAnswerHead(ptr, static_cast<size_t>(n));
    return n;
  }

  ssize_t read(char* ptr, size_t size) final {
    if (in_head_) {
      if (head_bytes_ >= max_head_) throw HeadTooLarge{};
      size = std::min(size, max_head_ - head_bytes_);
    }
    const ssize_t n = ReadSome(ptr, size);
    if (in_head_ && n > 0) head_bytes_ += static_cast<size_t>(n);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      IpAndPort(addr, len, ip, port);
    }
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      IpAndPort(addr, len, ip, port);
    }
  }
  socket_t socket() const override { return fd_; }

 protected:
  // Bytes received but not yet handed out.
  virtual bool Buffered() const = 0;
  // At most `size` bytes, waiting up to the read timeout: > 0, 0 at end of stream, -1.
  virtual ssize_t ReadSome(char* ptr, size_t size) = 0;
  // Sends the end of the stream (FIN; TLS: close_notify first).
  virtual void EndSending() = 0;
  // Sends at most `size` bytes, waiting up to the write timeout: > 0 or -1.
  virtual ssize_t WriteSome(const char* ptr, size_t size) = 0;

  // After an answer that ends the connection, while the client may still be sending what the
  // server will not read (a refused body or head): drops what arrives until the client closes,
  // pauses for 250 ms, or 2 s have passed. A client sending a request reads nothing until it is
  // done, and a close with its bytes unread resets the connection, which can drop the answer
  // before the client reads it. True when it was still sending at the end: the connection is then
  // reset rather than closed, since a closed socket's remains answer further data only with
  // acknowledgments and the client's send would hang for a minute instead of failing.
  bool StillSendingAfterDrain() const {
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    std::array<char, 16384> sink;
    while (WaitFor(fd_, POLLIN, 250)) {
      if (Clock::now() >= deadline) return true;
      const ssize_t n = recv(fd_, sink.data(), sink.size(), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return false;
    }
    return false;
  }

  // The socket's close then sends a reset.
  void CloseAbortively() const {
    const linger abort{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
  }

  const int fd_;
  const int read_ms_;
  const int write_ms_;

 private:
  // The answer's head, up to its blank line: interim (1xx) answers are skipped, and a head past
  // 16 KiB (ours are far smaller) is not looked at further.
  void NoteAnswerHead(const char* ptr, size_t n) {
    constexpr size_t kMaxAnswerHead = 16u << 10;
    answer_head_.append(
        ptr, std::min(n, kMaxAnswerHead - std::min(answer_head_.size(), kMaxAnswerHead)));
    for (size_t end; (end = answer_head_.find("\r\n\r\n")) != std::string::npos;) {
      std::string head = answer_head_.substr(0, end + 2);
      answer_head_.erase(0, end + 4);
      // 100 Continue: the final answer follows.
      if (head.compare(0, 10, "HTTP/1.1 1") == 0 || head.compare(0, 10, "HTTP/1.0 1") == 0)
        continue;
      in_answer_head_ = false;
      std::transform(head.begin(), head.end(), head.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      closes_ = head.find("\r\nconnection: close\r\n") != std::string::npos;
      return;
    }
    if (answer_head_.size() >= kMaxAnswerHead) in_answer_head_ = false;
  }

  const size_t max_head_;
  size_t head_bytes_ = 0;
  bool in_head_ = false;
  std::string answer_head_;
  bool in_answer_head_ = false;
  bool closes_ = false;
};

class PlainStream final : public ConnectionStream {
 public:
  using ConnectionStream::ConnectionStream;

  ssize_t WriteSome(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    while ((n = send(fd_, ptr, size, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
    }
    return n;
  }

 private:
  bool Buffered() const override { return begin_ < end_; }

  // Buffered: the library reads a request's head one byte at a time.
  ssize_t ReadSome(char* ptr, size_t size) override {
    if (begin_ == end_) {
      if (!is_readable()) return -1;
      ssize_t n;
      while ((n = recv(fd_, buffer_.data(), buffer_.size(), 0)) < 0 && errno == EINTR) {
      }
      if (n <= 0) return n;
      begin_ = 0;
      end_ = static_cast<size_t>(n);
    }
    const size_t n = std::min(size, end_ - begin_);
    std::memcpy(ptr, buffer_.data() + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  void EndSending() override { shutdown(fd_, SHUT_WR); }

  std::array<char, 4096> buffer_;
  size_t begin_ = 0, end_ = 0;
};

// OpenSSL's error queue is per thread and SSL_get_error reads it: each call starts it empty.
class TlsStream final : public ConnectionStream {
 public:
  TlsStream(int fd, SSL* ssl, int read_ms, int write_ms, size_t max_head)
      : ConnectionStream(fd, read_ms, write_ms, max_head), ssl_(ssl) {}

  ssize_t WriteSome(const char* ptr, size_t size) override {
    const ssize_t n = Retry(
        write_ms_, [&] { return is_writable(); }, [&](int n) { return SSL_write(ssl_, ptr, n); },
        size);
    return n == 0 ? -1 : n;  // the peer's close_notify: nothing more can be sent
  }

 private:
  // OpenSSL buffers a whole record; that is this stream's read buffer.
  bool Buffered() const override { return SSL_pending(ssl_) > 0; }

  ssize_t ReadSome(char* ptr, size_t size) override {
    return Retry(
        read_ms_, [&] { return is_readable(); }, [&](int n) { return SSL_read(ssl_, ptr, n); },
        size);
  }

  // SSL_read or SSL_write until it moves bytes (> 0), the peer's close_notify (0), an error or
  // the timeout (-1). Either may want the socket readable or writable, so both retry.
  template <typename Ready, typename Op>
  ssize_t Retry(int timeout_ms, Ready ready, Op op, size_t size) {
    const int n = static_cast<int>(std::min<size_t>(size, INT_MAX));
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      if (!ready()) return -1;
      ERR_clear_error();
      const int r = op(n);
      if (r > 0) return r;
      const int err = SSL_get_error(ssl_, r);
      if (err == SSL_ERROR_ZERO_RETURN) return 0;
      if ((err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) || Clock::now() >= deadline) {
        return -1;
      }
    }
  }

  void EndSending() override {
    ERR_clear_error();
    SSL_shutdown(ssl_);
    shutdown(fd_, SHUT_WR);
  }

  SSL* const ssl_;
};

// 0.11.4's keep-alive loop (process_server_socket_core), refusing a head past the bound.
template <typename Process>
bool ServeRequests(ConnectionStream& strm, const std::atomic<socket_t>& listening,
                   size_t max_requests, time_t keep_alive_s, const HeadLimit& limit,
                   Process process) {
  bool ok = false;
  for (size_t left = max_requests; left > 0; --left) {
    strm.StartRequest();
    if (!strm.AwaitRequest(keep_alive_s, listening)) break;
    bool closed = false;
    try {
      ok = process(/*close_connection=*/left == 1, closed);
    } catch (const HeadTooLarge&) {
      strm.Refuse(limit);
      return false;
    }
    if (!ok || closed) break;
    if (strm.AnswerCloses()) {
      strm.CloseAfterAnswer();
      break;
    }
  }
  return ok;
}

// The server's side of the handshake, within `timeout_ms` in all (a client that sends its
// handshake a byte at a time gets no longer). The socket is blocking again afterwards: reads and
// writes wait with poll() and, inside OpenSSL, the SO_RCVTIMEO/SO_SNDTIMEO the library set.
SSL* Accept(SSL_CTX* ctx, int fd, int timeout_ms) {
  // SSL_new and SSL_free on a shared context are thread-safe since OpenSSL 1.1.0; the library's
  // own lock around them is private to it.
  SSL* ssl = SSL_new(ctx);
  if (!ssl) return nullptr;
  const int flags = fcntl(fd, F_GETFL);
  bool ok = SSL_set_fd(ssl, fd) == 1 && flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (ok) {
    ERR_clear_error();
    const int r = SSL_accept(ssl);
    if (r == 1) break;
    const int err = SSL_get_error(ssl, r);
    const short events = err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    ok = (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) &&
         WaitFor(fd, events, MillisLeft(deadline));
  }
  if (flags >= 0) fcntl(fd, F_SETFL, flags);
  if (!ok) {
    SSL_free(ssl);
    ERR_clear_error();
    return nullptr;
  }
  return ssl;
}

}  // namespace

BoundedServer::BoundedServer(HeadLimit limit) : limit_(std::move(limit)) {}

bool BoundedServer::process_and_close_socket(socket_t sock) {
  bool ok = false;
  {
    PlainStream strm(sock, Millis(read_timeout_sec_, read_timeout_usec_),
                     Millis(write_timeout_sec_, write_timeout_usec_), limit_.max_bytes);
    const std::function<void(httplib::Request&)> head_read = [&strm](httplib::Request&) {
      strm.EndHead();
    };
    ok = ServeRequests(strm, svr_sock_, keep_alive_max_count_, keep_alive_timeout_sec_, limit_,
                       [&](bool close_connection, bool& connection_closed) {
                         return process_request(strm, close_connection, connection_closed,
                                                head_read);
                       });
  }
  shutdown(sock, SHUT_RDWR);
  close(sock);
  return ok;
}

BoundedTlsServer::BoundedTlsServer(HeadLimit limit,
                                   const std::function<bool(SSL_CTX& ctx)>& setup_ssl_ctx)
    : httplib::SSLServer(setup_ssl_ctx), limit_(std::move(limit)) {}

bool BoundedTlsServer::process_and_close_socket(socket_t sock) {
  const int read_ms = Millis(read_timeout_sec_, read_timeout_usec_);
  bool ok = false;
  if (SSL* ssl = Accept(ssl_context(), sock, read_ms)) {
    {
      TlsStream strm(sock, ssl, read_ms, Millis(write_timeout_sec_, write_timeout_usec_),
                     limit_.max_bytes);
      const std::function<void(httplib::Request&)> head_read = [&strm, ssl](httplib::Request& req) {
        req.ssl = ssl;
        strm.EndHead();
      };
      ok = ServeRequests(strm, svr_sock_, keep_alive_max_count_, keep_alive_timeout_sec_, limit_,
                         [&](bool close_connection, bool& connection_closed) {
                           return process_request(strm, close_connection, connection_closed,
                                                  head_read);
                         });
    }
    // As the library does: close_notify only when the connection ended in good order.
    if (ok) {
      ERR_clear_error();
      SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    ERR_clear_error();
  }
  shutdown(sock, SHUT_RDWR);
  close(sock);
  return ok;
}

}  // namespace jisu::server
