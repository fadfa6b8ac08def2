// HTTPS for `jisu serve --tls-cert FILE --tls-key FILE`: cpp-httplib's SSLServer (Debian builds
// it with OpenSSL) over a context set up here, so that a bad file is a clear startup error
// naming the flag, the file and OpenSSL's reason instead of a server that refuses every
// handshake. TLS 1.2 or newer; the certificate file may hold a chain (leaf first).
#pragma once

#include <memory>
#include <string>

#include "jisu/status.h"

namespace httplib {
class Server;
}

namespace jisu::server {

struct HeadLimit;

// An httplib::SSLServer (BoundedTlsServer: its heads bounded by `head`) serving `cert_path` (PEM
// certificate chain) with `key_path` (PEM private key, unencrypted), after checking that both load
// and that the key is the certificate's.
Result<std::unique_ptr<httplib::Server>> MakeTlsServer(const std::string& cert_path,
                                                       const std::string& key_path,
                                                       const HeadLimit& head);

}  // namespace jisu::server
