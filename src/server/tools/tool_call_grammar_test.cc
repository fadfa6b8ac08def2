// The tool-call grammars checked by jisu's own GBNF engine (src/grammar: its parser and
// matcher are checked against llama.cpp's grammar files and Python's re/jsonschema in
// src/grammar/*_test.cc): for every real upstream template whose format is detected, the
// grammar of tool_choice "required" accepts the calls the template renders (what the model was
// trained to write), one call or two, and the grammar of a named function accepts a call of it
// only; prose, other functions and malformed calls are rejected. Skipped where the templates
// are not fetched, except under CI.
#include "server/tools/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "grammar/grammar_test_util.h"
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

ToolRequest Request(ToolChoice choice, const std::string& name = "", bool parallel = true) {
  ToolRequest r;
  r.tools = tool_testing::TestTools();
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

}  // namespace
}  // namespace jisu::server
