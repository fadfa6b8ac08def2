#include "loadgen/client.h"

#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "format/json_util.h"
#include "loadgen/openai_stream.h"
#include "loadgen/sse_parser.h"

namespace jisu::loadgen {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

constexpr size_t kMaxErrorBody = 4096;
constexpr size_t kMaxPlainBody = 1 << 20;

std::unique_ptr<httplib::Client> MakeClient(const ClientOptions& o) {
  // The scheme-host-port form picks TLS (Debian's cpp-httplib is built with OpenSSL).
  const std::string host =
      o.base.host.find(':') != std::string::npos ? "[" + o.base.host + "]" : o.base.host;
  auto cli = std::make_unique<httplib::Client>((o.base.tls ? "https://" : "http://") + host + ":" +
                                               std::to_string(o.base.port));
  if (o.base.tls) cli->enable_server_certificate_verification(o.verify_tls);
  auto us = [](double s) { return std::chrono::microseconds(static_cast<int64_t>(s * 1e6)); };
  cli->set_connection_timeout(us(o.connect_timeout_s));
  cli->set_read_timeout(us(o.timeout_s));
  cli->set_write_timeout(us(o.timeout_s));
  cli->set_keep_alive(false);
  return cli;
}

std::string DescribeError(httplib::Error err) {
  switch (err) {
    case httplib::Error::SSLServerVerification:
      return "TLS: the server's certificate is not trusted or does not name this host (--insecure "
             "skips the check)";
    case httplib::Error::SSLConnection:
      return "TLS: handshake failed (is the server speaking https?)";
    default:
      return "httplib: " + httplib::to_string(err);
  }
}

httplib::Headers BaseHeaders(const ClientOptions& o) {
  httplib::Headers h;
  if (!o.api_key.empty()) h.emplace("Authorization", "Bearer " + o.api_key);
  return h;
}

std::string ErrorMessageFromBody(const std::string& body) {
  auto parsed = ParseUntrustedJson<nlohmann::json>(body, "answer");
  if (parsed.ok() && parsed->is_object()) {
    const nlohmann::json& j = *parsed;
    auto e = j.find("error");
    if (e != j.end()) {
      if (e->is_object() && e->contains("message") && (*e)["message"].is_string()) {
        return (*e)["message"].get<std::string>();
      }
      if (e->is_string()) return e->get<std::string>();
    }
  }
  return body.substr(0, 300);
}

}  // namespace

Result<BaseUrl> ParseBaseUrl(const std::string& url) {
  std::string rest;
  BaseUrl b;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else if (url.rfind("https://", 0) == 0) {
    rest = url.substr(8);
    b.tls = true;
    b.port = 443;
  } else {
    return Status::InvalidArgument("--base-url must start with http:// or https://, got '" + url +
                                   "'");
  }
  const size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (hostport.empty()) return Status::InvalidArgument("--base-url has no host: " + url);
  // An IPv6 literal is bracketed: [::1]:8080.
  std::string port;
  if (hostport[0] == '[') {
    const size_t close = hostport.find(']');
    if (close == std::string::npos || close == 1) {
      return Status::InvalidArgument("--base-url: bad IPv6 host in " + url);
    }
    const std::string after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return Status::InvalidArgument("--base-url: bad host in " + url);
      port = after.substr(1);
      if (port.empty()) return Status::InvalidArgument("--base-url: bad port ''");
    }
    hostport = hostport.substr(1, close - 1);
  } else if (const size_t colon = hostport.rfind(':'); colon != std::string::npos) {
    port = hostport.substr(colon + 1);
    if (port.empty()) return Status::InvalidArgument("--base-url: bad port ''");
    hostport.resize(colon);
  }
  if (!port.empty()) {
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || p <= 0 || p > 65535) {
      return Status::InvalidArgument("--base-url: bad port '" + port + "'");
    }
    b.port = static_cast<int>(p);
  }
  if (hostport.empty()) return Status::InvalidArgument("--base-url has no host: " + url);
  b.host = hostport;
  if (path.size() < 3 || path.compare(path.size() - 3, 3, "/v1") != 0) path += "/v1";
  b.prefix = path;
  return b;
}

RequestResult SendStreaming(const ClientOptions& o, const std::string& path,
                            const std::string& body) {
  RequestResult r;
  auto cli = MakeClient(o);
  SseParser parser;
  OpenAiStreamReader reader(&r);
  std::string raw;  // error body, or a whole non-streamed answer
  bool got_headers = false;
  bool timed_out = false;
  double last_byte = 0;

  httplib::Request req;
  req.method = "POST";
  req.path = o.base.prefix + path;
  req.headers = BaseHeaders(o);
  req.headers.emplace("Accept", "text/event-stream");
  req.headers.emplace("Content-Type", "application/json");
  req.body = body;
  req.response_handler = [&](const httplib::Response& res) {
    got_headers = true;
    r.http_status = res.status;
    return true;
  };
  const Clock::time_point t0 = Clock::now();
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    const double t = SecondsSince(t0);
    last_byte = t;
    if (r.http_status != 200) {
      raw.append(data, std::min(n, kMaxErrorBody - std::min(kMaxErrorBody, raw.size())));
      return true;
    }
    if (reader.events() == 0 && raw.size() < kMaxPlainBody) raw.append(data, n);
    parser.Feed(data, n, [&](std::string_view ev) { reader.OnEvent(ev, t); });
    if (t > o.timeout_s) {
      timed_out = true;
      return false;
    }
    return true;
  };

  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent = cli->send(req, res, err);
  const double end = SecondsSince(t0);
  r.e2e_s = end;
  if (!sent || err != httplib::Error::Success) {
    // cpp-httplib reports a read timeout and a dropped connection alike (Error::Read); the
    // silence before it tells them apart.
    const bool silent_too_long = end - last_byte >= 0.95 * o.timeout_s;
    if (timed_out || err == httplib::Error::ConnectionTimeout ||
        (err == httplib::Error::Read && silent_too_long)) {
      r.error = ErrorKind::kTimeout;
    } else if (got_headers && r.http_status == 200) {
      r.error = ErrorKind::kBrokenStream;
    } else if (got_headers) {
      r.error = ErrorKind::kHttpStatus;
    } else {
      r.error = ErrorKind::kConnection;
    }
    r.error_message = DescribeError(err);
    return r;
  }
  if (r.http_status != 200) {
    r.error = ErrorKind::kHttpStatus;
    r.error_message = ErrorMessageFromBody(raw);
    return r;
  }
  parser.Finish([&](std::string_view ev) { reader.OnEvent(ev, end); });
  if (r.error != ErrorKind::kNone) return r;
  if (reader.events() == 0 && !raw.empty() && raw.size() < kMaxPlainBody) {
    // The server ignored "stream": one JSON answer; all of it arrived at the end.
    reader.OnEvent(raw, end);
    if (r.error == ErrorKind::kNone && r.content_chunks == 0) {
      r.error = ErrorKind::kBadResponse;
      r.error_message = "response is neither an event stream nor a completion";
    }
    return r;
  }
  if (!reader.done()) {
    r.error = ErrorKind::kBrokenStream;
    r.error_message = "stream ended without data: [DONE]";
  }
  return r;
}

Result<std::string> FetchFirstModelId(const ClientOptions& o) {
  auto cli = MakeClient(o);
  auto res = cli->Get(o.base.prefix + "/models", BaseHeaders(o));
  const std::string where =
      "GET " + o.base.prefix + "/models on " + o.base.host + ":" + std::to_string(o.base.port);
  if (!res) return Status::IoError(where + ": " + DescribeError(res.error()));
  if (res->status != 200) {
    return Status::IoError(where + ": HTTP " + std::to_string(res->status) + ": " +
                           ErrorMessageFromBody(res->body));
  }
  auto parsed = ParseUntrustedJson<nlohmann::json>(res->body, where);
  if (!parsed.ok()) return parsed.status();
  nlohmann::json& j = *parsed;
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
      !j["data"][0].is_object() || !j["data"][0].contains("id") ||
      !j["data"][0]["id"].is_string()) {
    return Status::Corrupt(where + ": no model id in the answer (give --model)");
  }
  return j["data"][0]["id"].get<std::string>();
}

}  // namespace jisu::loadgen
