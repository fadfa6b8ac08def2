// The HTTP side of the load generator: one blocking cpp-httplib client per request (a fresh
// connection each, as independent users would open), streaming the response through the SSE
// parser while timing every chunk.
#pragma once

#include <string>

#include "jisu/status.h"
#include "loadgen/request_result.h"

namespace jisu::loadgen {

struct BaseUrl {
  bool tls = false;  // https
  std::string host;
  int port = 80;       // 443 for https unless given
  std::string prefix;  // path before /chat/completions, e.g. "/v1"
};

// "http[s]://host[:port][/path]"; "/v1" is appended unless the path already ends with it, so
// both http://127.0.0.1:8080 and https://api.example.com/v1 work.
Result<BaseUrl> ParseBaseUrl(const std::string& url);

struct ClientOptions {
  BaseUrl base;
  std::string api_key;     // sent as "Authorization: Bearer ..." when not empty
  double timeout_s = 600;  // whole request, and the longest silence between two reads
  double connect_timeout_s = 10;
  // https: check the server's certificate against the system's CA store and its name
  // (--insecure turns this off, for endpoints with self-signed certificates).
  bool verify_tls = true;
};

// POSTs `body` (a streaming request) to base.prefix + path and measures it. Never throws;
// failures are classified in the result.
RequestResult SendStreaming(const ClientOptions& options, const std::string& path,
                            const std::string& body);

// GET /models and the first model id (what --model defaults to).
Result<std::string> FetchFirstModelId(const ClientOptions& options);

}  // namespace jisu::loadgen
