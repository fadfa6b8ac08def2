#include "server/tls_server.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "server/bounded_connection.h"

namespace jisu::server {
namespace {

// OpenSSL's queued errors as one line (and the queue emptied).
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

Status Readable(const char* flag, const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::IoError(std::string(flag) + " " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

Status Configure(SSL_CTX& ctx, const std::string& cert_path, const std::string& key_path) {
  ERR_clear_error();
  // An encrypted key fails to load instead of OpenSSL prompting on the terminal for a password.
  SSL_CTX_set_default_passwd_cb(&ctx, [](char*, int, int, void*) { return 0; });
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(
      &ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_use_certificate_chain_file(&ctx, cert_path.c_str()) != 1) {
    return Status::InvalidArgument("--tls-cert " + cert_path +
                                   ": not a usable PEM certificate: " + OpenSslErrors());
  }
  if (SSL_CTX_use_PrivateKey_file(&ctx, key_path.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Status::InvalidArgument(
        "--tls-key " + key_path +
        ": not a usable PEM private key (or not the key of --tls-cert): " + OpenSslErrors());
  }
  if (SSL_CTX_check_private_key(&ctx) != 1) {
    return Status::InvalidArgument("--tls-key " + key_path + " is not the key of --tls-cert " +
                                   cert_path + ": " + OpenSslErrors());
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<httplib::Server>> MakeTlsServer(const std::string& cert_path,
                                                       const std::string& key_path,
                                                       const HeadLimit& head) {
  JISU_RETURN_IF_ERROR(Readable("--tls-cert", cert_path));
  JISU_RETURN_IF_ERROR(Readable("--tls-key", key_path));
  Status status;
  auto server = std::make_unique<BoundedTlsServer>(head, [&](SSL_CTX& ctx) {
    status = Configure(ctx, cert_path, key_path);
    return status.ok();
  });
  JISU_RETURN_IF_ERROR(status);
  if (!server->is_valid()) {
    return Status::Internal("TLS: cannot create an OpenSSL context: " + OpenSslErrors());
  }
  return std::unique_ptr<httplib::Server>(std::move(server));
}

}  // namespace jisu::server
