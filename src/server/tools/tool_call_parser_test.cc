// ToolCallParser per family: calls and content out of whole outputs, the same out of every
// split of them into streamed pieces (each byte boundary, and byte by byte), parallel calls,
// malformed blocks kept as content; and, where scripts/setup.sh fetched llama.cpp's real chat
// templates, every template whose format is detected renders assistant tool calls that parse
// back to the calls it was given (the template shows what the model was trained to write).
#include "server/tools/tool_call_parser.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "server/tools/tool_test_util.h"
#include "tests/test_util.h"

namespace jisu::server {
namespace {

struct Parsed {
  std::string content;
  std::vector<ToolCall> calls;
  bool operator==(const Parsed&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Parsed& p) {
  os << "content " << nlohmann::json(p.content).dump() << ", calls [";
  for (const ToolCall& c : p.calls) os << c.name << " " << c.arguments << "; ";
  return os << "]";
}

Parsed Collect(const std::vector<ToolParseEvent>& events) {
  Parsed p;
  for (const ToolParseEvent& e : events) {
    if (e.call) {
      EXPECT_TRUE(e.content.empty());
      p.calls.push_back(*e.call);
    } else {
      EXPECT_FALSE(e.content.empty()) << "an empty content event";
      p.content += e.content;
    }
  }
  return p;
}

Parsed ParsePieces(ToolCallFormat format, const std::vector<std::string_view>& pieces) {
  ToolCallParser parser(format);
  std::vector<ToolParseEvent> events;
  for (std::string_view piece : pieces) parser.Push(piece, &events);
  parser.Finish(&events);
  return Collect(events);
}

// Parses `text` whole, split at every byte boundary, and byte by byte: all must agree.
Parsed ParseEverySplit(ToolCallFormat format, std::string_view text) {
  const Parsed whole = ParsePieces(format, {text});
  for (size_t i = 0; i <= text.size(); ++i) {
    EXPECT_EQ(ParsePieces(format, {text.substr(0, i), text.substr(i)}), whole)
        << "split at byte " << i << " of " << text;
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  EXPECT_EQ(ParsePieces(format, bytes), whole) << "byte by byte: " << text;
  return whole;
}

ToolCall Call(std::string name, std::string arguments) {
  return ToolCall{std::move(name), std::move(arguments)};
}

TEST(ToolCallParserTest, Hermes) {
  const auto f = ToolCallFormat::kHermes;
  EXPECT_EQ(ParseEverySplit(f,
                            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                            "{\"city\": \"Paris\", \"days\": 3}}\n</tool_call>"),
            (Parsed{"", {Call("get_weather", R"({"city":"Paris","days":3})")}}));
  // Text before, two parallel calls, whitespace between them; arguments as JSON text.
  EXPECT_EQ(ParseEverySplit(f,
                            "Let me check. \n<tool_call>\n{\"name\": \"a\", \"arguments\": "
                            "{}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": "
                            "\"{\\\"x\\\": [1, {\\\"y\\\": \\\"}\\\"}]}\"}\n</tool_call>\n"),
            (Parsed{"Let me check.", {Call("a", "{}"), Call("b", R"({"x":[1,{"y":"}"}]})")}}));
  // No closing tag at the end of the output.
  EXPECT_EQ(ParseEverySplit(f, "<tool_call>{\"name\": \"a\", \"arguments\": {\"k\": \"é\"}}"),
            (Parsed{"", {Call("a", R"({"k":"é"})")}}));
  // Text that only looks like a marker, or mentions one, is content, byte for byte.
  EXPECT_EQ(ParseEverySplit(f, "a <tool b <tool_cal\n\n"), (Parsed{"a <tool b <tool_cal\n\n", {}}));
}

TEST(ToolCallParserTest, HermesMalformedIsContent) {
  const auto f = ToolCallFormat::kHermes;
  for (std::string text : std::vector<std::string>{
           "Hi\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": }\n</tool_call>",
           "<tool_call>{\"arguments\": {}}</tool_call>",
           "<tool_call>{\"name\": 5}</tool_call>",
           "<tool_call>{\"name\": \"a\", \"arguments\": [1]}</tool_call>",
           "<tool_call>not json at all</tool_call> and after",
           "<tool_call>{\"name\": \"a\", \"arguments\": {",
           "<tool_call>" + std::string(100, '[') + std::string(100, ']') + "</tool_call>",
       }) {
    EXPECT_EQ(ParseEverySplit(f, text), (Parsed{text, {}})) << text;
  }
  // A good call, then a bad block: the call, and the bad block as content.
  EXPECT_EQ(ParseEverySplit(f, "<tool_call>{\"name\": \"a\"}</tool_call>\n<tool_call>{x}"),
            (Parsed{"<tool_call>{x}", {Call("a", "{}")}}));
}

TEST(ToolCallParserTest, Llama3Json) {
  const auto f = ToolCallFormat::kLlama3Json;
  EXPECT_EQ(
      ParseEverySplit(f, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"),
      (Parsed{"", {Call("get_weather", R"({"city":"Paris"})")}}));
  EXPECT_EQ(ParseEverySplit(f,
                            "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"q\": \"}{\"}}; "
                            "{\"name\": \"b\", \"arguments\": {}}"),
            (Parsed{"", {Call("a", R"({"q":"}{"})"), Call("b", "{}")}}));
  // Prose is content as it comes; a JSON value that is not a call is content too.
  EXPECT_EQ(ParseEverySplit(f, "The answer is {\"name\": \"a\"}"),
            (Parsed{"The answer is {\"name\": \"a\"}", {}}));
  EXPECT_EQ(ParseEverySplit(f, "  {\"answer\": 42} done"), (Parsed{"  {\"answer\": 42} done", {}}));
  EXPECT_EQ(ParseEverySplit(f, "{\"name\": \"a\", \"parameters\": {"),
            (Parsed{"{\"name\": \"a\", \"parameters\": {", {}}));
  EXPECT_EQ(ParseEverySplit(f, "\n\n"), (Parsed{"\n\n", {}}));
}

TEST(ToolCallParserTest, Mistral) {
  const auto f = ToolCallFormat::kMistral;
  // Nemo: one array of calls.
  EXPECT_EQ(ParseEverySplit(f,
                            "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": 1}, "
                            "\"id\": \"abc123def\"}, {\"name\": \"b\", \"arguments\": {}}]"),
            (Parsed{"", {Call("a", R"({"x":1})"), Call("b", "{}")}}));
  // Small 3.2 / Devstral / Ministral: name [CALL_ID] id [ARGS] arguments, one marker per call.
  EXPECT_EQ(ParseEverySplit(f,
                            "Sure.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}"
                            "[TOOL_CALLS]get_time[CALL_ID]Ab3dE6gH9[ARGS]{\"zone\": \"CET\"}"),
            (Parsed{"Sure.",
                    {Call("get_weather", R"({"city":"Paris"})"),
                     Call("get_time", R"({"zone":"CET"})")}}));
  for (std::string text : std::vector<std::string>{
           "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": 1}]",
           "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}",
           "[TOOL_CALLS]get weather[ARGS]{}",
           "[TOOL_CALLS]get_weather[ARGS]not json",
           "[TOOL_CALLS]get_weather[ARGS]{\"a\": ",
           "[TOOL_CALLS][ARGS]{}",
           "[TOOL_CALLS]",
       }) {
    EXPECT_EQ(ParseEverySplit(f, text), (Parsed{text, {}})) << text;
  }
}

TEST(ToolCallParserTest, NoFormatIsAllContent) {
  EXPECT_EQ(ParseEverySplit(ToolCallFormat::kNone, " <tool_call>{\"name\": \"a\"}</tool_call> "),
            (Parsed{" <tool_call>{\"name\": \"a\"}</tool_call> ", {}}));
}

TEST(ToolCallParserTest, JsonValueEnd) {
  EXPECT_EQ(JsonValueEnd("{\"a\": \"}\\\"]\"} x"), 13u);
  EXPECT_EQ(JsonValueEnd("[{}, [1]]"), 9u);
  EXPECT_EQ(JsonValueEnd("{\"a\": [}"), 8u);  // mismatched: ends there, fails to parse
  EXPECT_EQ(JsonValueEnd("{\"a\": \"}"), std::string_view::npos);
  EXPECT_EQ(JsonValueEnd("x"), 0u);
}

TEST(ToolCallParserTest, DeepNestingIsRefusedNotParsed) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_FALSE(ToolCallFromJson(deep));
  EXPECT_FALSE(
      ToolCallFromJson("{\"name\": \"a\", \"arguments\": \"" + std::string(5000, '[') + "\"}"));
}

TEST(ToolCallParserTest, UpstreamTemplatesRenderCallsThatParseBack) {
  const std::filesystem::path dir = testing::ChatTemplateDir() / "upstream";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    if (testing::SetupDataRequired()) FAIL() << dir << " is missing";
    GTEST_SKIP() << dir << " is missing (see scripts/setup.sh)";
  }
  const auto one = nlohmann::ordered_json::parse(R"([{"id": "Ab3dE6gH9", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}])");
  auto two = one;
  two.push_back(nlohmann::ordered_json::parse(R"({"id": "Zx8cV5bN2", "type": "function",
      "function": {"name": "get_time", "arguments": {"zone": "Asia/Tokyo"}}})"));
  const std::vector<ToolCall> want_one = {Call("get_weather", R"({"city":"Paris"})")};
  std::vector<ToolCall> want_two = want_one;
  want_two.push_back(Call("get_time", R"({"zone":"Asia/Tokyo"})"));
  std::map<ToolCallFormat, int> checked;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".jinja") continue;
    const std::string source = tool_testing::ReadFile(e.path());
    const ToolCallFormat format = DetectToolCallFormat(source);
    if (format == ToolCallFormat::kNone) continue;
    auto t = ChatTemplate::Parse(source);
    ASSERT_TRUE(t.ok()) << e.path();
    const std::string name = e.path().filename().string();
    // Llama's templates allow one call per turn; the others render both.
    const bool single = format == ToolCallFormat::kLlama3Json;
    auto turn = tool_testing::RenderedCalls(**t, single ? one : two, "</s>");
    ASSERT_TRUE(turn) << name << ": the template did not render the calls after its prompt";
    const Parsed got = ParseEverySplit(format, *turn);
    EXPECT_EQ(got.calls, single ? want_one : want_two) << name << " rendered " << *turn;
    EXPECT_EQ(got.content, "") << name << " rendered " << *turn;
    ++checked[format];
  }
  EXPECT_GE(checked[ToolCallFormat::kHermes], 5);
  EXPECT_GE(checked[ToolCallFormat::kLlama3Json], 3);
  EXPECT_GE(checked[ToolCallFormat::kMistral], 4);
}

TEST(ToolCallFormatTest, DetectsFamiliesOfUpstreamTemplates) {
  const std::filesystem::path dir = testing::ChatTemplateDir() / "upstream";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) GTEST_SKIP() << dir << " is missing";
  const std::map<std::string, ToolCallFormat> want = {
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", ToolCallFormat::kHermes},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFormat::kHermes},
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::kHermes},
      {"Qwen-Qwen3-0.6B.jinja", ToolCallFormat::kHermes},
      {"Qwen-QwQ-32B.jinja", ToolCallFormat::kHermes},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::kLlama3Json},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::kLlama3Json},
      {"meta-llama-Llama-3.3-70B-Instruct.jinja", ToolCallFormat::kLlama3Json},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::kMistral},
      {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ToolCallFormat::kMistral},
      {"Qwen3-Coder.jinja", ToolCallFormat::kNone},
      {"GLM-4.6.jinja", ToolCallFormat::kNone},
      {"unsloth-Apriel-1.5.jinja", ToolCallFormat::kNone},
      {"meetkai-functionary-medium-v3.1.jinja", ToolCallFormat::kNone},
      {"google-gemma-2-2b-it.jinja", ToolCallFormat::kNone},
  };
  for (const auto& [name, format] : want) {
    const std::string source = tool_testing::ReadFile(dir / name);
    ASSERT_FALSE(source.empty()) << name;
    EXPECT_EQ(ToolCallFormatName(DetectToolCallFormat(source)), ToolCallFormatName(format)) << name;
  }
}

}  // namespace
}  // namespace jisu::server
