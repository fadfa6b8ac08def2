// The per-token server-sent events of a streamed response, written straight into a reused
// buffer instead of through nlohmann::json trees: this is the one JSON built per generated
// token, and the tree costs about ten allocations and a sorted-map build per token (measured:
// bench/results/2026-12-01-serve-overhead.md). The role chunk, logprobs chunks, the usage chunk
// and errors stay on nlohmann::json (once per request, or opt-in).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace jisu::server {

// Appends `s` (valid UTF-8) as a JSON string literal, escaped as nlohmann::json::dump() does:
// quote, backslash, \b \f \n \r \t, other bytes below 0x20 as \u00xx; the rest verbatim.
void AppendJsonString(std::string_view s, std::string* out);

class StreamChunkFormatter {
 public:
  // chat: chat.completion.chunk with "delta"; otherwise text_completion with "text".
  StreamChunkFormatter(bool chat, std::string_view id, int64_t created, std::string_view model,
                       bool include_usage);

  // "data: {...}\n\n" for choice `index`: the text `delta` (chat: an empty delta is `{}`),
  // logprobs null, finish_reason `finish_reason` or null when empty, and "usage": null when
  // usage was requested. The reference is valid until the next call.
  const std::string& Chunk(size_t index, std::string_view delta, std::string_view finish_reason);

 private:
  bool chat_;
  bool include_usage_;
  std::string head_;  // data: {"id":...,"object":...,"created":...,"model":...,"choices":[{"index":
  std::string buf_;
};

}  // namespace jisu::server
