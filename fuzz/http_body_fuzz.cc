// libFuzzer target: arbitrary bytes as the body of /v1/chat/completions (first byte even) or
// /v1/completions (odd), through the server's parser and validator. An error is the expected
// answer to most inputs; a crash, a sanitizer report, an exception or an accepted request that
// breaks the validator's own bounds is not.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/openai_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using jisu::server::Endpoint;
  const Endpoint endpoint = data[0] % 2 == 0 ? Endpoint::kChat : Endpoint::kCompletion;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  jisu::server::GenerationRequest request;
  const auto error = jisu::server::ParseGenerationRequest(body, endpoint, &request);
  if (error) {
    if (error->http_status < 400 || error->http_status > 599 || error->message.empty()) {
      __builtin_trap();
    }
    (void)error->ToJson().dump();
    return 0;
  }
  if (request.n < 1 || request.n > jisu::server::kMaxN ||
      request.top_logprobs > jisu::server::kMaxTopLogprobs ||
      request.prompts.size() > jisu::server::kMaxPrompts) {
    __builtin_trap();
  }
  if (endpoint == Endpoint::kChat && !request.messages.is_array()) __builtin_trap();
  // What the handler does next with an accepted body: serialize the messages for the template.
  (void)request.messages.dump();
  return 0;
}
