// Which request bodies the server agrees to read: a Content-Length of at most --max-body-bytes
// (cpp-httplib answers 413 beyond it and discards the body without storing it), no
// Transfer-Encoding, no Content-Encoding. cpp-httplib 0.11 (Debian 12) applies
// set_payload_max_length to Content-Length bodies only: a chunked body, a body without a
// length (read until the client closes) or a gzip/brotli body (inflated with no bound) would
// be read into memory whole. Such requests are refused (411, 415) before their body is read,
// and their connection is closed. The API's clients (the openai packages, curl --data) send
// Content-Length bodies.
#pragma once

#include <optional>

#include "server/openai_protocol.h"

namespace httplib {
struct Request;
}

namespace jisu::server {

// For a request whose headers are read and whose body is not: the error to answer with, or
// nullopt to go on. Requests without a body (GET) always go on.
std::optional<ApiError> CheckBodyFraming(const httplib::Request& req);

}  // namespace jisu::server
