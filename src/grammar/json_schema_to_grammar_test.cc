// JSON Schema conversion: what is refused (never a constraint dropped silently), strictness,
// recursion, and the whitespace bound. (Accept/reject against the jsonschema package:
// grammar_fixture_test.cc.)
#include "grammar/json_schema_to_grammar.h"

#include <gtest/gtest.h>

#include "grammar/grammar_test_util.h"

namespace jisu::grammar {
namespace {

std::string ErrorOf(const char* schema, bool strict = false) {
  auto g = JsonSchemaToGrammar(schema, JsonSchemaOptions{strict});
  EXPECT_FALSE(g.ok()) << schema;
  return g.ok() ? "" : g.status().message();
}

std::shared_ptr<const CompiledGrammar> Compile(const char* schema, bool strict = false) {
  auto g = JsonSchemaToGrammar(schema, JsonSchemaOptions{strict});
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return nullptr;
  return testing::CompileGrammar(*g, testing::ByteVocab());
}

TEST(JsonSchemaToGrammarTest, UnsupportedKeywordsAreErrorsNamingWhere) {
  EXPECT_EQ(ErrorOf(R"({"type":"object","properties":{"a":{"type":"integer","multipleOf":3}}})"),
            "json_schema at #/properties/a: keyword 'multipleOf' is not supported");
  EXPECT_EQ(ErrorOf(R"({"not":{"type":"string"}})"),
            "json_schema at #: keyword 'not' is not supported");
  EXPECT_EQ(ErrorOf(R"({"type":"array","items":{"type":"string"},"uniqueItems":true})"),
            "json_schema at #: keyword 'uniqueItems' is not supported");
  EXPECT_EQ(ErrorOf(R"({"type":"object","patternProperties":{"^x":{}}})"),
            "json_schema at #: keyword 'patternProperties' is not supported");
  EXPECT_EQ(
      ErrorOf(R"({"$ref":"other.json#/a"})"),
      "json_schema at #: $ref 'other.json#/a': only local references (\"#/...\") are supported");
  EXPECT_EQ(ErrorOf(R"({"$ref":"#/$defs/missing"})"),
            "json_schema at #: $ref '#/$defs/missing' does not resolve");
  EXPECT_EQ(ErrorOf(R"({"type":"string","format":"hostname"})"),
            "json_schema at #: format 'hostname' is not supported (date, time, date-time, uuid, "
            "email, ipv4)");
  EXPECT_EQ(ErrorOf(R"({"type":"strnig"})"), "json_schema at #: unknown type 'strnig'");
  EXPECT_EQ(ErrorOf("false"), "json_schema at #: the schema false matches nothing");
  EXPECT_EQ(ErrorOf("[1]"), "json_schema at #: a schema must be an object or a boolean");
  EXPECT_EQ(ErrorOf("{"), "json_schema is not valid JSON");
  EXPECT_NE(ErrorOf(R"({"type":"string","maxLength":20000})").find("above 10000"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"type":"number","minimum":0.5})").find("must be integers"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"type":"string","pattern":"(a)\\1"})").find("#/pattern: regex at offset"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"type":"string","pattern":"^a$","maxLength":3})").find("combining"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(R"({"allOf":[{"type":"string"},{"type":"integer"}]})").find("nothing in common"),
      std::string::npos);
  EXPECT_NE(ErrorOf(R"({"allOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},
                                 {"properties":{"b":{}},"additionalProperties":false}]})")
                .find("required property 'a' is excluded"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"type":"integer","minimum":5,"maximum":4})").find("no integer"),
            std::string::npos);
}

TEST(JsonSchemaToGrammarTest, AnnotationsAreIgnored) {
  auto c = Compile(
      R"({"title":"T","description":"d","$schema":"https://json-schema.org/draft/2020-12/schema",
                       "$comment":"c","examples":[1],"default":1,"deprecated":false,"type":"integer"})");
  ASSERT_TRUE(c);
  EXPECT_TRUE(testing::Accepts(c, "12"));
}

TEST(JsonSchemaToGrammarTest, StrictDecidesAbsentAdditionalProperties) {
  const char* schema =
      R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  auto strict = Compile(schema, true);
  auto loose = Compile(schema, false);
  EXPECT_TRUE(testing::Accepts(strict, R"({"a": 1})"));
  EXPECT_FALSE(testing::Accepts(strict, R"({"a": 1, "b": 2})"));
  EXPECT_TRUE(testing::Accepts(loose, R"({"a": 1, "b": [2, {"c": null}]})"));
  // An extra key never spells a declared one (that would be a duplicate key).
  EXPECT_FALSE(testing::Accepts(loose, R"({"a": 1, "a": 2})"));
  EXPECT_TRUE(testing::Accepts(loose, R"({"a": 1, "ab": 2})"));
}

TEST(JsonSchemaToGrammarTest, RecursiveRootReference) {
  auto c = Compile(R"({"type":"object","properties":{"name":{"type":"string"},
                       "next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},
                       "required":["name","next"],"additionalProperties":false})");
  ASSERT_TRUE(c);
  EXPECT_TRUE(testing::Accepts(c, R"({"name": "a", "next": {"name": "b", "next": null}})"));
  EXPECT_FALSE(testing::Accepts(c, R"({"name": "a", "next": {"name": "b"}})"));
}

TEST(JsonSchemaToGrammarTest, WhitespaceIsBounded) {
  auto c = Compile(R"({"type":"array","items":{"type":"integer"}})");
  EXPECT_TRUE(testing::Accepts(c, "[1, 2]"));
  EXPECT_TRUE(testing::Accepts(c, "[\n  1,\n  2\n]"));
  EXPECT_FALSE(testing::Accepts(c, "[1,  2]"));  // two spaces
  EXPECT_FALSE(testing::Accepts(c, "[1,\n" + std::string(21, ' ') + "2]"));
  EXPECT_FALSE(testing::Accepts(c, " [1]"));  // nothing before the value
  EXPECT_FALSE(testing::Accepts(c, "[1] "));  // nor after it
}

TEST(JsonSchemaToGrammarTest, JsonObjectIsAnyObject) {
  auto g = JsonObjectGrammar();
  ASSERT_TRUE(g.ok());
  auto c = testing::CompileGrammar(*g, testing::ByteVocab());
  EXPECT_TRUE(testing::Accepts(c, "{}"));
  EXPECT_TRUE(
      testing::Accepts(c, R"({"a": [1, -2.5e10, "x\u00e9", true, false, null, {"b": {}}]})"));
  EXPECT_FALSE(testing::Accepts(c, "[]"));
  EXPECT_FALSE(testing::Accepts(c, "\"x\""));
  EXPECT_FALSE(testing::Accepts(c, R"({"a": 01})"));
  EXPECT_FALSE(testing::Accepts(c, R"({"a": "\ud800"})"));  // a lone surrogate escape
}

TEST(JsonSchemaToGrammarTest, EnumObjectsAllowWhitespace) {
  auto c = Compile(R"({"enum":[{"a":[1,2]},"x"]})");
  EXPECT_TRUE(testing::Accepts(c, R"({"a":[1,2]})"));
  EXPECT_TRUE(testing::Accepts(c, R"({"a": [1, 2]})"));
  EXPECT_FALSE(testing::Accepts(c, R"({"a": [2, 1]})"));
}

TEST(JsonSchemaToGrammarTest, ConstraintKinds) {
  StructuredOutput c;
  c.kind = StructuredOutput::Kind::kRegex;
  c.text = "[0-9]+";
  EXPECT_TRUE(ConstraintGrammar(c).ok());
  c.kind = StructuredOutput::Kind::kGrammar;
  EXPECT_FALSE(ConstraintGrammar(c).ok());  // "[0-9]+" is not GBNF
  c.kind = StructuredOutput::Kind::kJsonObject;
  EXPECT_TRUE(ConstraintGrammar(c).ok());
  c.kind = StructuredOutput::Kind::kNone;
  EXPECT_FALSE(ConstraintGrammar(c).ok());
}

TEST(GrammarCompilerTest, CachesByConstraintWithAnLruBound) {
  GrammarCompiler compiler(testing::ByteVocab(), /*capacity=*/2);
  StructuredOutput a;
  a.kind = StructuredOutput::Kind::kRegex;
  a.text = "a+";
  StructuredOutput b = a;
  b.text = "b+";
  StructuredOutput c = a;
  c.text = "c+";
  auto first = compiler.Compile(a);
  ASSERT_TRUE(first.ok());
  auto again = compiler.Compile(a);
  EXPECT_EQ(first->get(), again->get());  // the same compiled grammar
  ASSERT_TRUE(compiler.Compile(b).ok());
  ASSERT_TRUE(compiler.Compile(c).ok());  // evicts a (least recently used)
  EXPECT_EQ(compiler.stats().size, 2);
  EXPECT_NE(compiler.Compile(a)->get(), first->get());
  EXPECT_EQ(compiler.stats().hits, 1);
  StructuredOutput strict = b;
  strict.kind = StructuredOutput::Kind::kJsonSchema;
  strict.text = R"({"type":"object"})";
  StructuredOutput loose = strict;
  strict.strict = true;
  EXPECT_NE(compiler.Compile(strict)->get(), compiler.Compile(loose)->get());
  StructuredOutput bad = a;
  bad.text = "(";
  EXPECT_EQ(compiler.Compile(bad).status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace jisu::grammar
