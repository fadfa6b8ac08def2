// GBNF parsing: what a bad grammar is told (line and column), the bounds on untrusted text, and
// that printing a grammar back gives one with the same strings. (Accept/reject against
// references: grammar_fixture_test.cc.)
#include "grammar/gbnf_parser.h"

#include <gtest/gtest.h>

#include "grammar/grammar_test_util.h"
#include "grammar/regex_to_grammar.h"

namespace jisu::grammar {
namespace {

std::string ErrorOf(std::string_view text) {
  auto g = ParseGbnf(text);
  EXPECT_FALSE(g.ok()) << text;
  return g.ok() ? "" : g.status().message();
}

TEST(GbnfParserTest, ErrorsNameLineAndColumn) {
  EXPECT_EQ(ErrorOf("root ::= \"a\"\nfoo ::= [a-\n"),
            "GBNF line 2, column 12: newline inside a character class");
  EXPECT_EQ(ErrorOf("root ::= \"abc"), "GBNF line 1, column 14: unterminated literal");
  EXPECT_EQ(ErrorOf("root ::= item\n"),
            "GBNF line 1, column 10: rule 'item' is used but not defined");
  EXPECT_EQ(ErrorOf("root = \"a\""), "GBNF line 1, column 6: expected '::=' after the rule name");
  EXPECT_EQ(ErrorOf("root ::= \"a\"\nroot ::= \"b\""),
            "GBNF line 2, column 1: rule 'root' is defined twice");
  EXPECT_EQ(ErrorOf("a ::= \"x\""), "GBNF: the grammar has no 'root' rule");
  EXPECT_EQ(ErrorOf("root ::= (\"a\" \"b\""), "GBNF line 1, column 18: expected ')'");
  EXPECT_EQ(ErrorOf("root ::= [z-a]"), "GBNF line 1, column 13: character range is out of order");
  EXPECT_EQ(ErrorOf("root ::= \"\\q\""), "GBNF line 1, column 11: unknown escape '\\q'");
  EXPECT_EQ(ErrorOf("root ::= \"a\"{3,2}"),
            "GBNF line 1, column 18: repetition {m,n} needs m <= n");
  EXPECT_EQ(ErrorOf("root ::= <[42]>"),
            "GBNF line 1, column 10: token references (<...>) are not supported");
  EXPECT_EQ(ErrorOf("root ::= \"é\" ) x"),
            "GBNF line 1, column 14: unexpected ')' (a rule ends at the end of its line)");
  EXPECT_EQ(ErrorOf("root ::= \"\\uD800\""),
            "GBNF line 1, column 11: escape is not a Unicode scalar value");
}

TEST(GbnfParserTest, UntrustedTextIsBounded) {
  std::string deep = "root ::= ";
  for (int i = 0; i < 100; ++i) deep += "(";
  deep += "\"a\"";
  for (int i = 0; i < 100; ++i) deep += ")";
  EXPECT_NE(ErrorOf(deep).find("nested deeper than 64"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"{100000}").find("repetition count above 10000"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMaxGbnfBytes + 1, ' ')).find("larger than"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\xff\"").find("not valid UTF-8"), std::string::npos);
  // Large but legal repetitions: the lowered program is bounded (repeated copies of a group
  // share one rule, so this one is small; 200 distinct long rules are not).
  auto shared = ParseGbnf("root ::= ([a-z]{10000}){10000}");
  ASSERT_TRUE(shared.ok());
  EXPECT_TRUE(Program::Lower(*shared).ok());
  std::string big = "root ::=";
  for (int i = 0; i < 200; ++i) big += " r" + std::to_string(i);
  for (int i = 0; i < 200; ++i) big += "\nr" + std::to_string(i) + " ::= [a-z]{9999}";
  auto g = ParseGbnf(big);
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto p = Program::Lower(*g);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("too large"), std::string::npos) << p.status().message();
}

TEST(GbnfParserTest, LlamaCppStyleGrammarsParse) {
  // The shape of llama.cpp's grammars/json.gbnf: rules split over lines inside parentheses.
  const char* kJsonish = R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)";
  auto g = ParseGbnf(kJsonish);
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto c = testing::CompileGrammar(*g, testing::ByteVocab());
  ASSERT_TRUE(c);
  EXPECT_TRUE(testing::Accepts(c, "{\"a\": [1, 2.5, \"x\\n\", true, {}]}"));
  EXPECT_FALSE(testing::Accepts(c, "{\"a\": [1, 2.5,]}"));
}

TEST(GbnfParserTest, PrintedGrammarParsesToTheSameLanguage) {
  const char* text =
      "root ::= (\"ab\" | [^a-c\\n]) x{2,4} \"q\"? y* \n"
      "x ::= [a-z0-9\\-\\]] | \"\\\"\" | \"é\" \n"
      "y ::= . \"\\t\"\n";
  auto g = ParseGbnf(text);
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto again = ParseGbnf(g->ToGbnf());
  ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << g->ToGbnf();
  auto a = testing::CompileGrammar(*g, testing::ByteVocab());
  auto b = testing::CompileGrammar(*again, testing::ByteVocab());
  for (const char* s :
       {"abaa", "d]\"\"", "zé-ééq", "abaaq\t", "abaa😀\t", "aaa", "ab\"", "ab]]]]]q"}) {
    EXPECT_EQ(testing::Accepts(a, s), testing::Accepts(b, s)) << s;
  }
  EXPECT_TRUE(testing::Accepts(a, "abaa😀\t"));
  EXPECT_FALSE(testing::Accepts(a, "aba"));
}

// A grammar imported into another under a prefix keeps its language there, and the two sets
// of rule names (both have `root` and `x`) do not meet.
TEST(GbnfParserTest, ImportedRulesKeepTheirLanguage) {
  auto outer = ParseGbnf("root ::= \"<\" inner \">\" x\ninner ::= \"?\"\nx ::= \"!\"\n");
  auto part = ParseGbnf("root ::= x (\",\" x)*\nx ::= [0-9]+ | \"(\" root \")\"\n");
  ASSERT_TRUE(outer.ok() && part.ok());
  auto root = ImportRules(*part, "inner-", &*outer);
  ASSERT_TRUE(root.ok()) << root.status().message();
  EXPECT_EQ(outer->rule(*root).name, "inner-root");
  outer->SetBody(static_cast<uint32_t>(outer->Find("inner")), Expr::Ref(*root));
  auto again = ParseGbnf(outer->ToGbnf());  // what the server sends the engine
  ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << outer->ToGbnf();
  auto c = testing::CompileGrammar(*again, testing::ByteVocab());
  ASSERT_TRUE(c);
  EXPECT_TRUE(testing::Accepts(c, "<1,(2,(3)),45>!"));
  EXPECT_FALSE(testing::Accepts(c, "<?>!"));
  EXPECT_FALSE(testing::Accepts(c, "<1,>!"));
  EXPECT_FALSE(testing::Accepts(c, "<1>"));
  EXPECT_FALSE(ImportRules(Grammar(), "p-", &*outer).ok());
}

TEST(RegexToGrammarTest, UnsupportedFeaturesAreErrors) {
  for (const char* p : {"(a)\\1", "a(?=b)", "a(?!b)", "(?<=a)b", "\\bword", "a^b", "a$b", "(?i)a",
                        "a**", "(a", "a)", "[a", "\\", "x{2,1}", "\\p{L}", "a{99999}"}) {
    auto g = RegexToGrammar(p);
    EXPECT_FALSE(g.ok()) << p;
  }
  auto g = RegexToGrammar("a(?=b)");
  EXPECT_EQ(g.status().message(),
            "regex at offset 2: lookaround and inline flags are not supported");
}

}  // namespace
}  // namespace jisu::grammar
