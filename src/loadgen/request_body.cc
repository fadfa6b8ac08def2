#include "loadgen/request_body.h"

#include <nlohmann/json.hpp>

namespace jisu::loadgen {

const char* EndpointPath(Endpoint e) {
  return e == Endpoint::kChat ? "/chat/completions" : "/completions";
}

std::string BuildRequestBody(const RequestSpec& spec, const BodyOptions& o) {
  nlohmann::json j;
  j["model"] = o.model;
  if (o.endpoint == Endpoint::kChat) {
    nlohmann::json messages = nlohmann::json::array();
    for (const Message& m : spec.messages) {
      messages.push_back({{"role", m.role}, {"content", m.content}});
    }
    j["messages"] = std::move(messages);
  } else if (!spec.prompt_tokens.empty()) {
    j["prompt"] = spec.prompt_tokens;
  } else {
    j["prompt"] = FlattenPrompt(spec.messages);
  }
  // Both names: older servers read max_tokens, newer chat APIs prefer max_completion_tokens.
  j["max_tokens"] = spec.max_tokens;
  if (o.endpoint == Endpoint::kChat) j["max_completion_tokens"] = spec.max_tokens;
  j["temperature"] = o.temperature;
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}};
  if (o.ignore_eos) j["ignore_eos"] = true;
  if (o.send_user) j["user"] = spec.user;
  return j.dump();
}

}  // namespace jisu::loadgen
