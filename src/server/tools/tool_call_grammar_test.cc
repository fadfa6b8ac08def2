// The tool-call grammars checked by jisu's own GBNF engine (src/grammar: its parser and
// matcher are checked against llama.cpp's grammar files and Python's re/jsonschema in
// src/grammar/*_test.cc): for every real upstream template whose format is detected, the
// grammar of tool_choice "required" accepts the calls the template renders (what the model was
// trained to write), one call or two, and the grammar of a named function accepts a call of it
// only; prose, other functions and malformed calls are rejected. Skipped where the templates
// are not fetched, except under CI. Then the arguments: each function's JSON Schema decides
// which arguments a call may have, and a schema that cannot be a constraint names its tool.
#include "server/tools/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "grammar/grammar_test_util.h"
#include "server/tools/tool_choice.h"
#include "server/tools/tool_test_util.h"
#include "tests/test_util.h"

namespace jisu::server {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// Whether the GBNF grammar accepts the whole text (bytes).
bool Accepts(const std::string& gbnf, const std::string& text) {
  StructuredOutput c;
  c.kind = StructuredOutput::Kind::kGrammar;
  c.text = gbnf;
  auto g = grammar::testing::CompileConstraint(c, grammar::testing::ByteVocab());
  EXPECT_NE(g, nullptr) << gbnf;
  return g != nullptr && grammar::testing::Accepts(g, text);
}

std::string Trimmed(std::string s) {
  const size_t b = s.find_first_not_of(" \t\n");
  const size_t e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Tools whose schemas accept the arguments the upstream test renders (jinja2's tojson sorts
// keys, and the schema grammar writes properties in the schema's order: both alphabetical).
Json RenderedTools() {
  return Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {
      "type": "object", "properties": {"city": {"type": "string"},
      "days": {"type": "array", "items": {"type": "number"}},
      "opts": {"type": "object", "properties": {"metric": {"type": "boolean"},
        "note": {"type": "null"}, "q": {"type": "string"}}}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time"}}])");
}

ToolRequest Request(ToolChoice choice, const std::string& name = "", bool parallel = true,
                    Json tools = RenderedTools()) {
  ToolRequest r;
  r.tools = std::move(tools);
  r.choice = choice;
  r.function_name = name;
  r.parallel = parallel;
  return r;
}

TEST(ToolCallGrammarTest, RefusesWhatItCannotForce) {
  EXPECT_FALSE(ToolCallGrammar(ToolCallFormat::kNone, MistralCallSyntax::kArgs,
                               Request(ToolChoice::kRequired))
                   .ok());
  EXPECT_FALSE(
      ToolCallGrammar(ToolCallFormat::kHermes, MistralCallSyntax::kArgs, Request(ToolChoice::kAuto))
          .ok());
  EXPECT_FALSE(ToolCallGrammar(ToolCallFormat::kHermes, MistralCallSyntax::kArgs,
                               Request(ToolChoice::kFunction, "nope"))
                   .ok());
}

TEST(ToolCallGrammarTest, AcceptsTheCallsUpstreamTemplatesRender) {
  const fs::path dir = testing::ChatTemplateDir() / "upstream";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    const std::string what = dir.string() + " is missing (see scripts/setup.sh)";
    if (testing::SetupDataRequired()) FAIL() << what;
    GTEST_SKIP() << what;
  }
  const Json weather = Json::parse(R"({"id": "Ab3dE6gH9", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2.5],
      "opts": {"metric": true, "note": null, "q": "say \"hi\"\n"}}}})");
  const Json time = Json::parse(R"({"id": "Zx8cV5bN2", "type": "function",
      "function": {"name": "get_time", "arguments": {}}})");
  int checked = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".jinja") continue;
    const std::string source = tool_testing::ReadFile(e.path());
    const ToolCallFormat format = DetectToolCallFormat(source);
    if (format == ToolCallFormat::kNone) continue;
    const MistralCallSyntax mistral = DetectMistralCallSyntax(source);
    auto t = ChatTemplate::Parse(source);
    ASSERT_TRUE(t.ok());
    const std::string name = e.path().filename().string();
    const bool single = format == ToolCallFormat::kLlama3Json;  // one call per turn
    auto one = tool_testing::RenderedCalls(**t, Json::array({weather}), "</s>");
    auto two =
        single ? one : tool_testing::RenderedCalls(**t, Json::array({weather, time}), "</s>");
    ASSERT_TRUE(one && two) << name;
    const std::string call = Trimmed(*one), calls = Trimmed(*two);

    auto required = ToolCallGrammar(format, mistral, Request(ToolChoice::kRequired));
    auto named = ToolCallGrammar(format, mistral, Request(ToolChoice::kFunction, "get_weather"));
    auto other = ToolCallGrammar(format, mistral, Request(ToolChoice::kFunction, "get_time"));
    auto serial = ToolCallGrammar(format, mistral, Request(ToolChoice::kRequired, "", false));
    ASSERT_TRUE(required.ok() && named.ok() && other.ok() && serial.ok()) << name;
    EXPECT_TRUE(Accepts(*required, call)) << name << ": " << call << "\n" << *required;
    if (!single) {
      EXPECT_TRUE(Accepts(*required, calls)) << name << ": " << calls;
      EXPECT_FALSE(Accepts(*named, calls)) << name;
      EXPECT_FALSE(Accepts(*serial, calls)) << name;
    }
    EXPECT_TRUE(Accepts(*named, call)) << name << ": " << call;
    EXPECT_TRUE(Accepts(*serial, call)) << name;
    EXPECT_FALSE(Accepts(*other, call)) << name;
    EXPECT_FALSE(Accepts(*required, "The weather is fine.")) << name;
    EXPECT_FALSE(Accepts(*required, "")) << name;
    // A malformed call: the arguments lose their closing brace.
    std::string broken = call;
    broken.erase(broken.find("}}"), 1);
    EXPECT_FALSE(Accepts(*required, broken)) << name << ": " << broken;
    ++checked;
  }
  EXPECT_GE(checked, 12);
}

// Hermes calls of TestTools()-like functions whose schemas say what the arguments are.
std::string HermesCall(const std::string& name, const std::string& args) {
  return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>";
}

TEST(ToolCallGrammarTest, ArgumentsFollowTheFunctionsSchema) {
  const Json tools = Json::parse(R"([
    {"type": "function", "function": {"name": "book", "strict": false, "parameters": {
      "type": "object", "properties": {"room": {"type": "string", "enum": ["a", "b"]},
      "nights": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["room"]}}},
    {"type": "function", "function": {"name": "ping"}},
    {"type": "function", "function": {"name": "note", "parameters": {
      "properties": {"text": {"type": "string", "maxLength": 3}}}}}])");
  auto required = ToolCallGrammar(ToolCallFormat::kHermes, MistralCallSyntax::kArgs,
                                  Request(ToolChoice::kRequired, "", true, tools));
  ASSERT_TRUE(required.ok()) << required.status().message();
  EXPECT_TRUE(Accepts(*required, HermesCall("book", R"({"room": "a", "nights": 3})")));
  EXPECT_TRUE(Accepts(*required, HermesCall("book", R"({"room": "b"})")));
  EXPECT_TRUE(Accepts(*required, HermesCall("ping", "{}")));
  EXPECT_TRUE(Accepts(*required, HermesCall("note", R"({"text": "abc"})")));
  EXPECT_TRUE(Accepts(*required, HermesCall("ping", "{}") + "\n" + HermesCall("ping", "{}")));
  // Not the schema: a value outside the enum or range, a required key missing, a key the
  // schema does not declare (strict: whatever the tool's `strict`), a string too long, a
  // function the tools do not have.
  EXPECT_FALSE(Accepts(*required, HermesCall("book", R"({"room": "c"})")));
  EXPECT_FALSE(Accepts(*required, HermesCall("book", R"({"room": "a", "nights": 10})")));
  EXPECT_FALSE(Accepts(*required, HermesCall("book", R"({"nights": 3})")));
  EXPECT_FALSE(Accepts(*required, HermesCall("book", R"({"room": "a", "view": true})")));
  EXPECT_FALSE(Accepts(*required, HermesCall("ping", R"({"x": 1})")));
  EXPECT_FALSE(Accepts(*required, HermesCall("note", R"({"text": "abcd"})")));
  EXPECT_FALSE(Accepts(*required, HermesCall("nope", "{}")));
  // Whitespace between calls is bounded: a model cannot loop on it.
  EXPECT_FALSE(
      Accepts(*required, HermesCall("ping", "{}") + "\n\n\n\n\n" + HermesCall("ping", "{}")));

  auto named = ToolCallGrammar(ToolCallFormat::kHermes, MistralCallSyntax::kArgs,
                               Request(ToolChoice::kFunction, "book", true, tools));
  ASSERT_TRUE(named.ok());
  EXPECT_TRUE(Accepts(*named, HermesCall("book", R"({"room": "a"})")));
  EXPECT_FALSE(Accepts(*named, HermesCall("ping", "{}")));
  EXPECT_FALSE(Accepts(*named, HermesCall("book", R"({"room": "a"})") + "\n" +
                                   HermesCall("book", R"({"room": "a"})")));

  // Llama 3's templates take one call a turn: "required" forces one.
  auto llama = ToolCallGrammar(ToolCallFormat::kLlama3Json, MistralCallSyntax::kArgs,
                               Request(ToolChoice::kRequired, "", true, tools));
  ASSERT_TRUE(llama.ok());
  EXPECT_TRUE(Accepts(*llama, R"({"name": "book", "parameters": {"room": "b", "nights": 1}})"));
  EXPECT_FALSE(Accepts(*llama, R"({"name": "book", "parameters": {"room": "x"}})"));
  EXPECT_FALSE(
      Accepts(*llama, R"({"name": "ping", "parameters": {}} {"name": "ping", "parameters": {}})"));
  auto mistral = ToolCallGrammar(ToolCallFormat::kMistral, MistralCallSyntax::kArray,
                                 Request(ToolChoice::kRequired, "", true, tools));
  ASSERT_TRUE(mistral.ok());
  EXPECT_TRUE(Accepts(*mistral, R"([TOOL_CALLS][{"name": "ping", "arguments": {}}, )"
                                R"({"name": "book", "arguments": {"room": "a"}}])"));
  EXPECT_FALSE(Accepts(*mistral, R"([TOOL_CALLS][{"name": "book", "arguments": {}}])"));
}

TEST(ToolCallGrammarTest, SchemasThatCannotConstrainNameTheirTool) {
  auto failing = [](const std::string& parameters, ToolChoice choice) {
    Json tools = RenderedTools();
    tools.push_back(Json::parse(R"({"type": "function", "function": {"name": "bad",
        "parameters": )" + parameters +
                                "}}"));
    size_t failed = 99;
    auto g = ToolCallGrammar(ToolCallFormat::kHermes, MistralCallSyntax::kArgs,
                             Request(choice, "bad", true, tools), &failed);
    EXPECT_FALSE(g.ok()) << parameters;
    EXPECT_EQ(failed, 2u) << parameters;
    return g.ok() ? "" : g.status().message();
  };
  EXPECT_NE(
      failing(R"({"type": "object", "properties": {"a": {"not": {}}}})", ToolChoice::kRequired)
          .find("keyword 'not'"),
      std::string::npos);
  EXPECT_NE(failing(R"({"type": "array"})", ToolChoice::kFunction).find("\"type\" must be"),
            std::string::npos);
  failing(R"({"$ref": "#/nowhere"})", ToolChoice::kRequired);
  // A named function's grammar holds only that function: the others' schemas are not read.
  Json tools = RenderedTools();
  tools.push_back(Json::parse(R"({"type": "function", "function": {"name": "bad",
      "parameters": {"type": "array"}}})"));
  EXPECT_TRUE(ToolCallGrammar(ToolCallFormat::kHermes, MistralCallSyntax::kArgs,
                              Request(ToolChoice::kFunction, "get_time", true, tools))
                  .ok());
}

// Every object schema of the structured-output suite (nested objects, $ref and recursion,
// unions, patterns, formats) compiles as a tool's parameters, beside another function, and the
// grammar text the server sends the engine parses back.
TEST(ToolCallGrammarTest, SuiteSchemasBecomeArguments) {
  const auto suite = testing::ReadJson(testing::TestDataDir() / "grammar" / "schemas.json");
  int compiled = 0;
  for (const auto& entry : suite["schemas"]) {
    Json tools = RenderedTools();
    tools.push_back(
        {{"type", "function"},
         {"function", {{"name", "f"}, {"parameters", Json::parse(entry["schema"].dump())}}}});
    // A string enum or an array cannot be a call's arguments.
    const bool object = entry["schema"].contains("type") ? entry["schema"]["type"] == "object"
                                                         : !entry["schema"].contains("enum");
    auto g = ToolCallGrammar(ToolCallFormat::kHermes, MistralCallSyntax::kArgs,
                             Request(ToolChoice::kRequired, "", true, tools));
    if (!object) {
      EXPECT_FALSE(g.ok()) << entry["name"];
      continue;
    }
    ASSERT_TRUE(g.ok()) << entry["name"] << ": " << g.status().message();
    StructuredOutput c;
    c.kind = StructuredOutput::Kind::kGrammar;
    c.text = *g;
    EXPECT_NE(grammar::testing::CompileConstraint(c, grammar::testing::ByteVocab()), nullptr)
        << entry["name"];
    ++compiled;
  }
  EXPECT_GE(compiled, 25);
}

// tool_choice "required" on a Mistral template: the constraint names the format's markers, so
// a vocabulary holding [TOOL_CALLS] and [ARGS] as special tokens lets the model write them as
// those tokens (as it was trained to), and the rest of the call as text.
TEST(ToolCallGrammarTest, ToolChoiceLetsMarkersBeTheirSpecialTokens) {
  GenerationRequest g;
  g.tools = Request(ToolChoice::kRequired);
  ASSERT_FALSE(ConstrainToolChoice(ToolCallFormat::kMistral, MistralCallSyntax::kArgs, &g));
  EXPECT_EQ(g.sampling.structured.special_tokens, ToolCallMarkers(ToolCallFormat::kMistral));
  // 257: [TOOL_CALLS], 258: [ARGS].
  grammar::GrammarCompiler compiler(grammar::testing::ByteVocab({"[TOOL_CALLS]", "[ARGS]"}));
  auto compiled = compiler.Compile(g.sampling.structured);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  grammar::GrammarMatcher m(*compiled);
  ASSERT_TRUE(m.AcceptToken(257));
  ASSERT_TRUE(m.AcceptBytes("get_time"));
  ASSERT_TRUE(m.AcceptToken(258));
  ASSERT_TRUE(m.AcceptBytes("{}"));
  EXPECT_TRUE(m.IsComplete());

  GenerationRequest hermes;
  hermes.tools = Request(ToolChoice::kFunction, "get_time");
  ASSERT_FALSE(ConstrainToolChoice(ToolCallFormat::kHermes, MistralCallSyntax::kArgs, &hermes));
  EXPECT_EQ(hermes.sampling.structured.special_tokens, ToolCallMarkers(ToolCallFormat::kHermes));
}

}  // namespace
}  // namespace jisu::server
