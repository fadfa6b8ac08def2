#include "server/stream_chunk.h"

#include <charconv>

namespace jisu::server {

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t run = 0;  // start of the bytes not yet copied
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default: {
        const char esc[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(esc, sizeof esc);
      }
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

StreamChunkFormatter::StreamChunkFormatter(bool chat, std::string_view id, int64_t created,
                                           std::string_view model, bool include_usage)
    : chat_(chat), include_usage_(include_usage) {
  head_ = "data: {\"id\":";
  AppendJsonString(id, &head_);
  head_ += chat ? ",\"object\":\"chat.completion.chunk\"" : ",\"object\":\"text_completion\"";
  head_ += ",\"created\":" + std::to_string(created) + ",\"model\":";
  AppendJsonString(model, &head_);
  head_ += ",\"choices\":[{\"index\":";
  buf_.reserve(head_.size() + 256);
}

const std::string& StreamChunkFormatter::Chunk(size_t index, std::string_view delta,
                                               std::string_view finish_reason) {
  buf_.assign(head_);
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, index).ptr;
  buf_.append(digits, end);
  if (chat_) {
    if (delta.empty()) {
      buf_ += ",\"delta\":{}";
    } else {
      buf_ += ",\"delta\":{\"content\":";
      AppendJsonString(delta, &buf_);
      buf_ += '}';
    }
  } else {
    buf_ += ",\"text\":";
    AppendJsonString(delta, &buf_);
  }
  buf_ += ",\"logprobs\":null,\"finish_reason\":";
  if (finish_reason.empty()) {
    buf_ += "null";
  } else {
    AppendJsonString(finish_reason, &buf_);
  }
  buf_ += "}]";
  if (include_usage_) buf_ += ",\"usage\":null";
  buf_ += "}\n\n";
  return buf_;
}

}  // namespace jisu::server
