#include "server/connection_probe.h"

#include <netdb.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/socket.h>

#include <utility>

namespace jisu::server {
namespace {

// Numeric host and port of `addr`, as cpp-httplib writes them into the request.
bool HostPort(const sockaddr_storage& addr, socklen_t len, std::string* host, int* port) {
  char h[NI_MAXHOST], s[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, h, sizeof h, s, sizeof s,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return false;
  }
  *host = h;
  *port = std::atoi(s);
  return true;
}

}  // namespace

ConnectionProbe::ConnectionProbe(std::string remote_addr, int remote_port, std::string local_addr,
                                 int local_port)
    : remote_addr_(std::move(remote_addr)),
      local_addr_(std::move(local_addr)),
      remote_port_(remote_port),
      local_port_(local_port) {}

int ConnectionProbe::FindSocket() const {
  if (remote_port_ <= 0 || local_port_ <= 0) return -1;
  // cpp-httplib serves only descriptors below FD_SETSIZE (it waits with select()).
  for (int fd = 0; fd < FD_SETSIZE; ++fd) {
    sockaddr_storage peer{}, self{};
    socklen_t plen = sizeof peer, slen = sizeof self;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) continue;
    std::string host;
    int port = -1;
    if (!HostPort(peer, plen, &host, &port) || port != remote_port_ || host != remote_addr_) {
      continue;
    }
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &slen) != 0) continue;
    if (!HostPort(self, slen, &host, &port) || port != local_port_) continue;
    if (!local_addr_.empty() && host != local_addr_) continue;
    return fd;
  }
  return -1;
}

bool ConnectionProbe::ClientGone() {
  if (fd_ == -2) fd_ = FindSocket();
  if (fd_ < 0) return false;
  pollfd p{fd_, static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (p.revents & POLLIN) {
    char c;
    // 0: orderly shutdown by the peer; bytes: a pipelined request, the client is there.
    const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0;
  }
  return false;
}

}  // namespace jisu::server
