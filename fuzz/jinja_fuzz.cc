// libFuzzer target: the input is a chat template. It is parsed and, when it parses, rendered
// with a fixed conversation (system/user/assistant with a tool call, a tool result, tools).
// Any status is fine; crashes, sanitizer reports, leaks and timeouts are not. Tight limits
// keep each input fast.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "chat/jinja_template.h"

namespace {

const char kMessages[] = R"([
  {"role": "system", "content": "You are helpful."},
  {"role": "user", "content": "Weather in Paris? é 🌍"},
  {"role": "assistant", "content": "", "tool_calls": [{"id": "call00001", "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}}]},
  {"role": "tool", "tool_call_id": "call00001", "content": "{\"t\": 21.5}"},
  {"role": "assistant", "content": "<think>hm</think>It is 21.5C.", "reasoning_content": "hm"},
  {"role": "user", "content": "  thanks \n"}
])";

const char kTools[] = R"([{"type": "function", "function": {"name": "get_weather",
  "description": "Get weather.", "parameters": {"type": "object", "properties": {
  "city": {"type": "string", "description": "City"}, "days": {"type": "integer"}},
  "required": ["city"]}}}])";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using jisu::jinja::Value;
  static const Value messages = *jisu::jinja::FromJson(nlohmann::ordered_json::parse(kMessages));
  static const Value tools = *jisu::jinja::FromJson(nlohmann::ordered_json::parse(kTools));
  if (size > 64 * 1024) return 0;
  std::string_view src(reinterpret_cast<const char*>(data), size);
  auto t = jisu::jinja::Template::Parse(src);
  if (!t.ok()) return 0;
  jisu::jinja::Limits limits;
  limits.max_steps = 100000;
  limits.max_value_bytes = 1 << 20;
  limits.max_list_items = 1 << 16;
  limits.max_work_bytes = 32 << 20;
  limits.max_call_depth = 50;
  limits.max_nesting = 400;
  for (bool gen : {false, true}) {
    std::vector<std::pair<std::string, Value>> vars = {
        {"messages", messages},
        {"tools", gen ? tools : Value::None()},
        {"documents", Value::None()},
        {"add_generation_prompt", Value::Bool(gen)},
        {"bos_token", Value::String("<s>")},
        {"eos_token", Value::String("</s>")},
    };
    auto out = (*t)->Render(vars, limits);
    (void)out;
  }
  return 0;
}
