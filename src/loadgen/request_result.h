// What one measured request produced: timings relative to its own start, token counts, and
// how it failed if it did.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jisu::loadgen {

enum class ErrorKind {
  kNone = 0,
  kHttpStatus,    // a non-200 answer (the status says which)
  kConnection,    // could not connect, or the connection dropped before any response header
  kTimeout,       // no byte for --timeout seconds, or the whole request ran past it
  kBrokenStream,  // 200 and some events, then the stream ended without "data: [DONE]"
  kStreamError,   // the server sent an error object inside the stream
  kBadResponse,   // unparseable event or response body
};

struct RequestResult {
  size_t index = 0;             // position in the request set
  int cls = 0;                  // RequestClass
  double start_s = 0;           // when it was sent, seconds since the run started
  double ttft_s = -1;           // first content chunk, seconds since send; -1 if none
  double e2e_s = 0;             // until [DONE] (or failure)
  std::vector<double> chunk_s;  // arrival of each content chunk, seconds since send
  int64_t prompt_tokens = -1;   // from usage; -1 when the server did not report it
  int64_t cached_tokens = -1;   // usage.prompt_tokens_details.cached_tokens
  int64_t usage_completion_tokens = -1;
  int64_t content_chunks = 0;
  ErrorKind error = ErrorKind::kNone;
  int http_status = 0;
  std::string error_message;

  bool ok() const { return error == ErrorKind::kNone; }
  // Usage's count when reported, else the number of content chunks.
  int64_t output_tokens() const {
    return usage_completion_tokens >= 0 ? usage_completion_tokens : content_chunks;
  }
};

const char* ErrorKindName(ErrorKind kind);
// "http_500", "timeout", ...: the key errors are counted under.
std::string ErrorKey(const RequestResult& r);

}  // namespace jisu::loadgen
