#include "server/body_framing.h"

#include <httplib.h>

#include "format/text_util.h"

namespace jisu::server {

std::optional<ApiError> CheckBodyFraming(const httplib::Request& req) {
  // The methods cpp-httplib reads a body for (detail::expect_content).
  const std::string& m = req.method;
  if (m != "POST" && m != "PUT" && m != "PATCH" && m != "DELETE" && m != "PRI") return std::nullopt;
  if (req.has_header("Transfer-Encoding") || (m != "DELETE" && !req.has_header("Content-Length"))) {
    ApiError e = ApiError::BadRequest(
        "send the request body with a Content-Length header (chunked or unsized bodies are not "
        "accepted)");
    e.http_status = 411;
    e.code = "length_required";
    return e;
  }
  const std::string encoding = req.get_header_value("Content-Encoding");
  if (!encoding.empty() && encoding != "identity") {
    ApiError e =
        ApiError::BadRequest("compressed request bodies are not accepted (Content-Encoding " +
                             QuoteName(encoding) + "); send plain JSON");
    e.http_status = 415;
    e.code = "unsupported_content_encoding";
    return e;
  }
  return std::nullopt;
}

}  // namespace jisu::server
