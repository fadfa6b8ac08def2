// Incremental parser for server-sent events (the text/event-stream framing of OpenAI streaming
// responses). Bytes arrive in arbitrary pieces (a line, or even a "\r\n", may be split across
// network reads), so the parser keeps the unfinished line between Feed calls.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/function_ref.h"

namespace jisu::loadgen {

class SseParser {
 public:
  // Called once per complete event with its data (several data: lines joined by '\n'). Events
  // without any data: line (comments, bare "event:" lines) are not reported.
  using EventFn = FunctionRef<void(std::string_view data)>;

  // Feeds the next bytes; calls `on_event` for each event completed by them.
  void Feed(const char* bytes, size_t n, EventFn on_event);
  // End of stream: a final event not followed by a blank line is still delivered (servers that
  // close right after "data: [DONE]\n" are common).
  void Finish(EventFn on_event);

  // Bytes held in the unfinished line (tests, and a guard against a never-ending line).
  size_t pending_bytes() const { return line_.size(); }

 private:
  void EndLine(EventFn on_event);
  void Dispatch(EventFn on_event);

  std::string line_;
  std::string data_;
  bool has_data_ = false;
  bool last_was_cr_ = false;
};

}  // namespace jisu::loadgen
