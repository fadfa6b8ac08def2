// The tool fields of chat requests through ParseGenerationRequest: what is accepted (and how
// the template will see it), and that each invalid field is a 400 naming it.
#include "server/tools/tool_fields.h"

#include <gtest/gtest.h>

namespace jisu::server {
namespace {

using Json = nlohmann::ordered_json;

const char* kTools = R"([{"type": "function", "function": {"name": "get_weather",
    "description": "Weather.", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}}}, "strict": true}},
    {"type": "function", "function": {"name": "get-time_2"}}])";

std::optional<ApiError> Parse(const std::string& extra, GenerationRequest* g) {
  const std::string body = R"({"messages": [{"role": "user", "content": "hi"}])" +
                           (extra.empty() ? "" : ", " + extra) + "}";
  return ParseGenerationRequest(body, Endpoint::kChat, g);
}

std::string ParamOf(const std::string& extra) {
  GenerationRequest g;
  auto e = Parse(extra, &g);
  EXPECT_TRUE(e) << extra;
  return e ? e->param : "";
}

TEST(ToolFieldsTest, ParsesToolsChoiceAndParallel) {
  GenerationRequest g;
  ASSERT_FALSE(Parse("", &g));
  EXPECT_TRUE(g.tools.tools.is_null());
  EXPECT_EQ(g.tools.choice, ToolChoice::kNone);
  EXPECT_FALSE(g.tools.parses_calls());

  ASSERT_FALSE(Parse(std::string("\"tools\": ") + kTools, &g));
  EXPECT_EQ(g.tools.tools, Json::parse(kTools));  // as sent, key order kept
  EXPECT_EQ(g.tools.choice, ToolChoice::kAuto);
  EXPECT_TRUE(g.tools.parallel);
  EXPECT_TRUE(g.tools.parses_calls());

  ASSERT_FALSE(
      Parse(std::string("\"tools\": ") + kTools +
                R"(, "tool_choice": {"type": "function", "function": {"name": "get-time_2"}},
                         "parallel_tool_calls": false)",
            &g));
  EXPECT_EQ(g.tools.choice, ToolChoice::kFunction);
  EXPECT_EQ(g.tools.function_name, "get-time_2");
  EXPECT_FALSE(g.tools.parallel);

  ASSERT_FALSE(Parse(std::string("\"tools\": ") + kTools + R"(, "tool_choice": "none")", &g));
  EXPECT_FALSE(g.tools.parses_calls());
  ASSERT_FALSE(Parse(R"("tool_choice": "none", "tools": null)", &g));
  ASSERT_FALSE(Parse(std::string("\"tools\": ") + kTools + R"(, "tool_choice": "required")", &g));
  EXPECT_EQ(g.tools.choice, ToolChoice::kRequired);
}

TEST(ToolFieldsTest, InvalidFieldsNameThemselves) {
  const std::string tools = std::string("\"tools\": ") + kTools + ", ";
  EXPECT_EQ(ParamOf(R"("tools": {})"), "tools");
  EXPECT_EQ(ParamOf(R"("tools": [])"), "tools");
  EXPECT_EQ(ParamOf(R"("tools": [5])"), "tools[0]");
  EXPECT_EQ(ParamOf(R"("tools": [{"function": {"name": "f"}}])"), "tools[0].type");
  EXPECT_EQ(ParamOf(R"("tools": [{"type": "code_interpreter"}])"), "tools[0].type");
  EXPECT_EQ(ParamOf(R"("tools": [{"type": "function"}])"), "tools[0].function");
  EXPECT_EQ(ParamOf(R"("tools": [{"type": "function", "function": {}}])"),
            "tools[0].function.name");
  EXPECT_EQ(ParamOf(R"("tools": [{"type": "function", "function": {"name": "a.b"}}])"),
            "tools[0].function.name");
  EXPECT_EQ(ParamOf(R"("tools": [{"type": "function", "function": {"name": ")" +
                    std::string(65, 'a') + R"("}}])"),
            "tools[0].function.name");
  EXPECT_EQ(ParamOf(R"("tools": [{"type": "function", "function": {"name": "f",
                    "description": 1}}])"),
            "tools[0].function.description");
  EXPECT_EQ(ParamOf(R"("tools": [{"type": "function", "function": {"name": "f",
                    "parameters": []}}])"),
            "tools[0].function.parameters");
  EXPECT_EQ(ParamOf(R"("tools": [{"type": "function", "function": {"name": "f",
                    "strict": "yes"}}])"),
            "tools[0].function.strict");
  std::string many = "\"tools\": [";
  for (int i = 0; i < 129; ++i) {
    many += std::string(i ? "," : "") + R"({"type": "function", "function": {"name": "f"}})";
  }
  EXPECT_EQ(ParamOf(many + "]"), "tools");
  EXPECT_EQ(ParamOf(tools + R"("tool_choice": "always")"), "tool_choice");
  EXPECT_EQ(ParamOf(tools + R"("tool_choice": 1)"), "tool_choice");
  EXPECT_EQ(ParamOf(tools + R"("tool_choice": {"type": "function"})"), "tool_choice.function");
  EXPECT_EQ(ParamOf(tools + R"("tool_choice": {"type": "x", "function": {"name": "f"}})"),
            "tool_choice.type");
  EXPECT_EQ(ParamOf(tools + R"("tool_choice": {"type": "function", "function": {"name": "f"}})"),
            "tool_choice.function.name");
  EXPECT_EQ(ParamOf(R"("tool_choice": "auto")"), "tool_choice");
  EXPECT_EQ(ParamOf(tools + R"("parallel_tool_calls": 1)"), "parallel_tool_calls");
}

TEST(ToolFieldsTest, MessagesKeepToolCallsAndResults) {
  GenerationRequest g;
  const std::string body = R"({"messages": [
      {"role": "user", "content": "weather?"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"n\": 1.5}"}},
        {"id": "call_2", "type": "function",
         "function": {"name": "get_weather", "arguments": "not json"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "18 C"}]}]})";
  ASSERT_FALSE(ParseGenerationRequest(body, Endpoint::kChat, &g));
  const Json& assistant = g.messages[1];
  EXPECT_EQ(assistant["content"], "");
  // Arguments JSON text becomes the object it encodes (templates print it with tojson);
  // text that is not an object stays as it was.
  EXPECT_EQ(assistant["tool_calls"][0]["function"]["arguments"],
            Json::parse(R"({"city": "Paris", "n": 1.5})"));
  EXPECT_EQ(assistant["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(assistant["tool_calls"][1]["function"]["arguments"], "not json");
  EXPECT_EQ(g.messages[2]["tool_call_id"], "call_1");
  EXPECT_EQ(g.messages[2]["content"], "18 C");
}

// Arguments are JSON text inside the body's JSON: the body's depth bound does not see into
// them, so their own parse is bounded (a template walking 100,000 levels would overflow the
// stack); text nested past the bound stays the string it was.
TEST(ToolFieldsTest, ArgumentsNestedTooDeepStayAString) {
  const std::string deep =
      "{\\\"a\\\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const std::string body = R"({"messages": [{"role": "user", "content": "hi"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
       "function": {"name": "f", "arguments": ")" +
                           deep + R"("}}]}]})";
  GenerationRequest g;
  ASSERT_FALSE(ParseGenerationRequest(body, Endpoint::kChat, &g));
  const Json& args = g.messages[1]["tool_calls"][0]["function"]["arguments"];
  ASSERT_TRUE(args.is_string());
  EXPECT_EQ(args.get<std::string>().size(), 200007u);
}

TEST(ToolFieldsTest, InvalidMessageToolFieldsNameThemselves) {
  auto param = [](const std::string& message) {
    GenerationRequest g;
    auto e = ParseGenerationRequest(
        R"({"messages": [{"role": "user", "content": "q"}, )" + message + "]}", Endpoint::kChat,
        &g);
    EXPECT_TRUE(e) << message;
    return e ? e->param : "";
  };
  EXPECT_EQ(param(R"({"role": "tool", "content": "r"})"), "messages[1].tool_call_id");
  EXPECT_EQ(param(R"({"role": "tool", "content": "r", "tool_call_id": 5})"),
            "messages[1].tool_call_id");
  EXPECT_EQ(param(R"({"role": "user", "content": "r", "tool_calls": []})"),
            "messages[1].tool_calls");
  EXPECT_EQ(param(R"({"role": "assistant", "tool_calls": {}})"), "messages[1].tool_calls");
  EXPECT_EQ(param(R"({"role": "assistant", "tool_calls": [{"type": "function"}]})"),
            "messages[1].tool_calls[0].id");
  EXPECT_EQ(param(R"({"role": "assistant", "tool_calls": [{"id": "a", "type": "function",
                     "function": {"name": "f"}}]})"),
            "messages[1].tool_calls[0].function.arguments");
  EXPECT_EQ(param(R"({"role": "assistant", "tool_calls": [{"id": "a", "type": "function",
                     "function": {"name": "f", "arguments": 3}}]})"),
            "messages[1].tool_calls[0].function.arguments");
}

TEST(ToolFieldsTest, ServableOnlyWithAFormat) {
  ToolRequest t;
  EXPECT_FALSE(CheckToolsServable(t, ToolCallFormat::kNone));  // no tools
  t.tools = Json::parse(kTools);
  t.choice = ToolChoice::kAuto;
  EXPECT_FALSE(CheckToolsServable(t, ToolCallFormat::kHermes));
  auto e = CheckToolsServable(t, ToolCallFormat::kNone);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "tools");
  t.choice = ToolChoice::kNone;  // rendered for the model, nothing parsed
  EXPECT_FALSE(CheckToolsServable(t, ToolCallFormat::kNone));
  // Forced calls are parsed too: they need a format, and with one they are served
  // (tool_choice.h constrains them).
  for (ToolChoice c : {ToolChoice::kRequired, ToolChoice::kFunction}) {
    t.choice = c;
    EXPECT_FALSE(CheckToolsServable(t, ToolCallFormat::kHermes));
    e = CheckToolsServable(t, ToolCallFormat::kNone);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "tools");
  }
}

}  // namespace
}  // namespace jisu::server
