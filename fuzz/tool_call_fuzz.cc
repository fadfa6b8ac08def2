// libFuzzer target: ToolCallParser on arbitrary output text in each format. The first byte
// picks the format and where to split the rest; the text is parsed whole, in two pushes and
// byte by byte, which must agree; every call's arguments must be a JSON object; and an output
// in which no call was found must come back as content byte for byte.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/tools/tool_call_parser.h"

namespace {

using jisu::server::ToolCallFormat;
using jisu::server::ToolCallParser;
using jisu::server::ToolParseEvent;

std::string Flatten(const std::vector<ToolParseEvent>& events, int* num_calls) {
  std::string out;
  *num_calls = 0;
  for (const ToolParseEvent& e : events) {
    if (e.call) {
      ++*num_calls;
      auto args = nlohmann::json::parse(e.call->arguments, nullptr, false);
      if (!args.is_object() || e.call->name.empty()) __builtin_trap();
      out += "\x01" + e.call->name + "\x02" + e.call->arguments + "\x03";
    } else {
      out += e.content;
    }
  }
  return out;
}

std::string Parse(ToolCallFormat format, const std::vector<std::string_view>& pieces,
                  int* num_calls) {
  ToolCallParser parser(format);
  std::vector<ToolParseEvent> events;
  for (std::string_view p : pieces) parser.Push(p, &events);
  parser.Finish(&events);
  return Flatten(events, num_calls);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  const ToolCallFormat format = static_cast<ToolCallFormat>(data[0] % 4);
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  int calls = 0, calls2 = 0, calls3 = 0;
  const std::string whole = Parse(format, {text}, &calls);
  const size_t cut = text.empty() ? 0 : (data[0] / 4) % (text.size() + 1);
  if (Parse(format, {text.substr(0, cut), text.substr(cut)}, &calls2) != whole) __builtin_trap();
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  if (Parse(format, bytes, &calls3) != whole) __builtin_trap();
  if (calls == 0 && whole != text) __builtin_trap();
  return 0;
}
