#include "loadgen/openai_stream.h"

#include <nlohmann/json.hpp>

#include "format/json_util.h"

namespace jisu::loadgen {
namespace {

bool NonEmptyString(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
}

void Fail(RequestResult* r, ErrorKind kind, std::string message) {
  if (r->error != ErrorKind::kNone) return;  // the first failure is the cause
  r->error = kind;
  r->error_message = std::move(message);
}

}  // namespace

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNone:
      return "none";
    case ErrorKind::kHttpStatus:
      return "http";
    case ErrorKind::kConnection:
      return "connection";
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kBrokenStream:
      return "broken_stream";
    case ErrorKind::kStreamError:
      return "stream_error";
    case ErrorKind::kBadResponse:
      return "bad_response";
  }
  return "?";
}

std::string ErrorKey(const RequestResult& r) {
  if (r.error == ErrorKind::kHttpStatus) return "http_" + std::to_string(r.http_status);
  return ErrorKindName(r.error);
}

void OpenAiStreamReader::OnEvent(std::string_view data, double t) {
  ++events_;
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  auto parsed = ParseUntrustedJson<nlohmann::json>(data, "stream event");
  if (!parsed.ok() || !parsed->is_object()) {
    Fail(result_, ErrorKind::kBadResponse,
         "unparseable stream event: " + std::string(data.substr(0, 200)));
    return;
  }
  const nlohmann::json& j = *parsed;
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    std::string message = e->is_object() && e->contains("message") && (*e)["message"].is_string()
                              ? (*e)["message"].get<std::string>()
                              : e->dump();
    Fail(result_, ErrorKind::kStreamError, message);
    return;
  }
  bool content = false;
  if (auto choices = j.find("choices"); choices != j.end() && choices->is_array()) {
    for (const auto& c : *choices) {
      if (!c.is_object()) continue;
      if (NonEmptyString(c, "text")) content = true;  // /v1/completions
      if (auto d = c.find("delta"); d != c.end() && d->is_object()) {
        // Reasoning models stream thinking first; it is output the user waits for.
        if (NonEmptyString(*d, "content") || NonEmptyString(*d, "reasoning_content")) {
          content = true;
        }
      }
      if (auto m = c.find("message"); m != c.end() && m->is_object()) {  // non-stream answer
        if (NonEmptyString(*m, "content")) content = true;
      }
    }
  }
  if (content) {
    if (result_->ttft_s < 0) result_->ttft_s = t;
    result_->chunk_s.push_back(t);
    ++result_->content_chunks;
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    auto get = [&](const nlohmann::json& o, const char* key) -> int64_t {
      auto it = o.find(key);
      return it != o.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
    };
    if (int64_t v = get(*u, "prompt_tokens"); v >= 0) result_->prompt_tokens = v;
    if (int64_t v = get(*u, "completion_tokens"); v >= 0) result_->usage_completion_tokens = v;
    if (auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object()) {
      if (int64_t v = get(*d, "cached_tokens"); v >= 0) result_->cached_tokens = v;
    }
  }
}

}  // namespace jisu::loadgen
