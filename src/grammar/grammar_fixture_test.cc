// The converters against references (tests/data/grammar, tools/make_grammar_fixtures.py):
// regexes against Python's re.fullmatch, GBNF grammars against an equivalent Python regex or
// Python's own checker, JSON Schemas against the jsonschema package. Each text is run through
// the compiled grammar's matcher byte by byte.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar_test_util.h"
#include "grammar/json_schema_to_grammar.h"
#include "grammar/regex_to_grammar.h"
#include "tests/test_util.h"

namespace jisu::grammar {
namespace {

using Json = nlohmann::ordered_json;

Json Fixture(const char* name) {
  const std::string text =
      testing::ReadFile((jisu::testing::TestDataDir() / "grammar" / name).string());
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << name;
  return j;
}

TEST(GrammarFixtureTest, RegexMatchesPythonFullmatch) {
  const Json f = Fixture("regex.json");
  ASSERT_TRUE(f.contains("cases"));
  auto vocab = testing::ByteVocab();
  int checked = 0;
  for (const Json& c : f["cases"]) {
    const std::string pattern = c["pattern"];
    auto g = RegexToGrammar(pattern);
    ASSERT_TRUE(g.ok()) << pattern << ": " << g.status().message();
    auto compiled = testing::CompileGrammar(*g, vocab);
    ASSERT_TRUE(compiled) << pattern;
    for (const Json& s : c["strings"]) {
      const std::string text = s[0];
      EXPECT_EQ(testing::Accepts(compiled, text), s[1].get<bool>())
          << "pattern " << pattern << " on \"" << text << "\"";
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(GrammarFixtureTest, GbnfMatchesItsReference) {
  const Json f = Fixture("gbnf.json");
  auto vocab = testing::ByteVocab();
  int checked = 0;
  for (const Json& c : f["cases"]) {
    const std::string text = c["grammar"];
    auto g = ParseGbnf(text);
    ASSERT_TRUE(g.ok()) << text << ": " << g.status().message();
    auto compiled = testing::CompileGrammar(*g, vocab);
    ASSERT_TRUE(compiled) << text;
    for (const Json& s : c["strings"]) {
      EXPECT_EQ(testing::Accepts(compiled, s[0].get<std::string>()), s[1].get<bool>())
          << "grammar\n"
          << text << "\non \"" << s[0].get<std::string>() << "\"";
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(GrammarFixtureTest, JsonSchemaMatchesJsonschemaPackage) {
  const Json f = Fixture("json_schema.json");
  auto vocab = testing::ByteVocab();
  for (const Json& c : f["cases"]) {
    const std::string name = c["name"];
    auto g = JsonSchemaToGrammar(c["schema"].dump(), JsonSchemaOptions{c["strict"].get<bool>()});
    ASSERT_TRUE(g.ok()) << name << ": " << g.status().message();
    auto compiled = testing::CompileGrammar(*g, vocab);
    ASSERT_TRUE(compiled) << name;
    const bool subset = c["subset"];
    int accepted_valid = 0;
    for (const Json& t : c["texts"]) {
      const std::string text = t[0];
      const bool valid = t[1];
      const bool accepted = testing::Accepts(compiled, text);
      accepted_valid += accepted && valid;
      if (subset) {
        // The grammar generates part of the valid texts: whatever it accepts must be valid.
        EXPECT_TRUE(!accepted || valid) << name << ": accepted invalid " << text;
      } else {
        EXPECT_EQ(accepted, valid) << name << ": " << text;
      }
    }
    EXPECT_GT(accepted_valid, 0) << name << ": the grammar accepts none of the valid texts";
  }
}

}  // namespace
}  // namespace jisu::grammar
