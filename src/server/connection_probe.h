// Tells whether the client of a request still holds its connection, for answers that are not
// streamed (a streamed answer learns it from a failed write). cpp-httplib 0.11.4 (Debian) gives a
// handler no socket and no "connection closed" query, so the probe finds the request's socket
// by its address pair (the request's local and remote address and port, unique among open
// sockets) and asks the kernel: peer hung up (POLLRDHUP/POLLHUP/POLLERR) or end of stream.
//
// Caveat: a client that half-closes its sending side after the request (shutdown(SHUT_WR))
// looks gone; ordinary HTTP clients do not do that.
#pragma once

#include <string>

namespace jisu::server {

class ConnectionProbe {
 public:
  ConnectionProbe(std::string remote_addr, int remote_port, std::string local_addr, int local_port);

  // True once the peer has closed the connection. The first call scans the open descriptors
  // (about a millisecond); false when the socket cannot be found.
  bool ClientGone();

 private:
  int FindSocket() const;

  std::string remote_addr_, local_addr_;
  int remote_port_, local_port_;
  int fd_ = -2;  // -2: not looked up yet; -1: not found
};

}  // namespace jisu::server
