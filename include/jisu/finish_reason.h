// Why a request stopped, from the scheduler to the edge (public: include/jisu). The text form is
// OpenAI's finish_reason, produced only where a response is written.
#pragma once

#include <cstdint>

namespace jisu {

enum class FinishReason : uint8_t {
  kNone,
  kLength,     // max_tokens generated, or the context (max_model_len) is full
  kStop,       // EOS or a stop string
  kCancelled,  // cancelled by the caller, or by a shutdown
  kError,      // the request failed (its Status says why)
};

// "stop", "length", "cancelled", "error" ("none" while running).
const char* FinishReasonName(FinishReason reason);

}  // namespace jisu
