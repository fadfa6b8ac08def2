#include "loadgen/sse_parser.h"

namespace jisu::loadgen {

void SseParser::Feed(const char* bytes, size_t n, EventFn on_event) {
  for (size_t i = 0; i < n; ++i) {
    const char c = bytes[i];
    if (c == '\n' && last_was_cr_) {  // second half of a "\r\n" split or not: already ended
      last_was_cr_ = false;
      continue;
    }
    last_was_cr_ = (c == '\r');
    if (c == '\r' || c == '\n') {
      EndLine(on_event);
    } else {
      line_.push_back(c);
    }
  }
}

void SseParser::Finish(EventFn on_event) {
  if (!line_.empty()) EndLine(on_event);
  Dispatch(on_event);
}

void SseParser::EndLine(EventFn on_event) {
  if (line_.empty()) {
    Dispatch(on_event);
    return;
  }
  if (line_[0] != ':') {
    std::string_view line(line_);
    const size_t colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value;
    if (colon != std::string_view::npos) {
      value = line.substr(colon + 1);
      if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      if (has_data_) data_.push_back('\n');
      data_.append(value);
      has_data_ = true;
    }
    // event:, id:, retry: carry nothing the load generator needs.
  }
  line_.clear();
}

void SseParser::Dispatch(EventFn on_event) {
  if (!has_data_) return;
  on_event(data_);
  data_.clear();
  has_data_ = false;
}

}  // namespace jisu::loadgen
