// The JSON body sent for one workload request, for /chat/completions or /completions.
#pragma once

#include <string>

#include "loadgen/workload.h"

namespace jisu::loadgen {

enum class Endpoint { kChat, kCompletions };

struct BodyOptions {
  std::string model;
  Endpoint endpoint = Endpoint::kChat;
  double temperature = 0;   // greedy: the same request set gives the same outputs
  bool ignore_eos = false;  // vLLM's extension, honoured by jisu serve; fixes output lengths
  bool send_user = true;    // the OpenAI `user` field (jisu's prefix-cache tenant)
};

// Path under the base URL's prefix.
const char* EndpointPath(Endpoint e);

std::string BuildRequestBody(const RequestSpec& spec, const BodyOptions& options);

}  // namespace jisu::loadgen
