// The structured-output and logit_bias fields of request bodies: every spelling clients send,
// and a 400 naming the field for malformed or unsupported ones.
#include "server/structured_output_request.h"

#include <gtest/gtest.h>

namespace jisu::server {
namespace {

using Kind = StructuredOutput::Kind;

const char* kMsgs = R"("messages":[{"role":"user","content":"hi"}])";

GenerationRequest Ok(const std::string& fields, Endpoint e = Endpoint::kChat) {
  const std::string body = e == Endpoint::kChat ? "{" + std::string(kMsgs) + "," + fields + "}"
                                                : "{\"prompt\":\"p\"," + fields + "}";
  GenerationRequest g;
  auto err = ParseGenerationRequest(body, e, &g);
  EXPECT_FALSE(err.has_value()) << body << ": " << (err ? err->message : "");
  return g;
}

ApiError Err(const std::string& fields) {
  GenerationRequest g;
  const std::string body = "{" + std::string(kMsgs) + "," + fields + "}";
  auto err = ParseGenerationRequest(body, Endpoint::kChat, &g);
  EXPECT_TRUE(err.has_value()) << body;
  return err.value_or(ApiError{});
}

TEST(StructuredOutputRequest, ResponseFormatKinds) {
  EXPECT_EQ(Ok(R"("response_format":{"type":"text"})").sampling.structured.kind, Kind::kNone);
  GenerationRequest g = Ok(R"("response_format":{"type":"json_object"})");
  EXPECT_EQ(g.sampling.structured.kind, Kind::kJsonObject);
  EXPECT_EQ(g.constraint_param, "response_format");
  g = Ok(R"("response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,
           "schema":{"type":"object","properties":{"a":{"type":"integer"}}}}})");
  EXPECT_EQ(g.sampling.structured.kind, Kind::kJsonSchema);
  EXPECT_TRUE(g.sampling.structured.strict);
  EXPECT_EQ(g.sampling.structured.text,
            R"({"type":"object","properties":{"a":{"type":"integer"}}})");
  EXPECT_EQ(g.constraint_param, "response_format.json_schema.schema");
  g = Ok(R"("response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}})");
  EXPECT_FALSE(g.sampling.structured.strict);  // OpenAI's default
  // llama.cpp's json_object with a schema.
  g = Ok(R"("response_format":{"type":"json_object","schema":{"type":"string"}})");
  EXPECT_EQ(g.sampling.structured.kind, Kind::kJsonSchema);
  // On /v1/completions too.
  g = Ok(R"("response_format":{"type":"json_object"})", Endpoint::kCompletion);
  EXPECT_EQ(g.sampling.structured.kind, Kind::kJsonObject);
}

TEST(StructuredOutputRequest, VllmAndLlamaCppSpellings) {
  GenerationRequest g =
      Ok(R"("guided_json":{"type":"integer"},"guided_decoding_backend":"xgrammar")");
  EXPECT_EQ(g.sampling.structured.kind, Kind::kJsonSchema);
  EXPECT_TRUE(g.sampling.structured.strict);
  EXPECT_EQ(g.constraint_param, "guided_json");
  g = Ok(R"("guided_json":"{\"type\": \"integer\"}")");
  EXPECT_EQ(g.sampling.structured.text, R"({"type": "integer"})");
  g = Ok(R"("guided_regex":"\\d+")");
  EXPECT_EQ(g.sampling.structured.kind, Kind::kRegex);
  EXPECT_EQ(g.sampling.structured.text, "\\d+");
  g = Ok(R"("guided_grammar":"root ::= \"a\"")");
  EXPECT_EQ(g.sampling.structured.kind, Kind::kGrammar);
  g = Ok(R"("guided_choice":["yes","no \"way\""])");
  EXPECT_EQ(g.sampling.structured.kind, Kind::kGrammar);
  EXPECT_EQ(g.sampling.structured.text, R"(root ::= "yes" | "no \"way\"")");
  g = Ok(R"("structured_outputs":{"json":{"type":"boolean"}})");
  EXPECT_EQ(g.constraint_param, "structured_outputs.json");
  g = Ok(R"("structured_outputs":{"choice":["a"]})");
  EXPECT_EQ(g.constraint_param, "structured_outputs.choice");
  g = Ok(R"("grammar":"root ::= [a-z]+")");
  EXPECT_EQ(g.sampling.structured.kind, Kind::kGrammar);
  g = Ok(R"("json_schema":{"type":"object"})");
  EXPECT_EQ(g.sampling.structured.kind, Kind::kJsonSchema);
  g = Ok(R"("jisu":{"regex":"a|b","matmul":"auto"})");
  EXPECT_EQ(g.sampling.structured.kind, Kind::kRegex);
  EXPECT_EQ(g.constraint_param, "jisu.regex");
  g = Ok(R"("jisu":{"grammar":"root ::= \"x\""})");
  EXPECT_EQ(g.sampling.structured.kind, Kind::kGrammar);
}

TEST(StructuredOutputRequest, MalformedIsA400NamingTheField) {
  EXPECT_EQ(Err(R"("response_format":"json")").param, "response_format");
  EXPECT_EQ(Err(R"("response_format":{"type":"xml"})").param, "response_format.type");
  EXPECT_EQ(Err(R"("response_format":{"type":"json_schema"})").param,
            "response_format.json_schema");
  EXPECT_EQ(Err(R"("response_format":{"type":"json_schema","json_schema":{"name":"x"}})").param,
            "response_format.json_schema.schema");
  EXPECT_EQ(
      Err(R"("response_format":{"type":"json_schema","json_schema":{"schema":{},"strict":"yes"}})")
          .param,
      "response_format.json_schema.strict");
  EXPECT_EQ(Err(R"("guided_json":5)").param, "guided_json");
  EXPECT_EQ(Err(R"("guided_json":"{not json")").param, "guided_json");
  EXPECT_EQ(Err(R"("guided_regex":"")").param, "guided_regex");
  EXPECT_EQ(Err(R"("guided_choice":[])").param, "guided_choice");
  EXPECT_EQ(Err(R"("guided_choice":["a",1])").param, "guided_choice");
  EXPECT_EQ(Err(R"("structured_outputs":{"whitespace_pattern":" "})").param,
            "structured_outputs.whitespace_pattern");
  EXPECT_EQ(Err(R"("jisu":{"grammar":7})").param, "jisu.grammar");
  // One constraint per request.
  ApiError two = Err(R"("response_format":{"type":"json_object"},"guided_regex":"a")");
  EXPECT_EQ(two.param, "guided_regex");
  EXPECT_NE(two.message.find("cannot be combined with 'response_format'"), std::string::npos);
}

TEST(StructuredOutputRequest, UnimplementedFieldsAreRefused) {
  EXPECT_EQ(Err(R"("functions":[{"name":"f"}])").param, "functions");
  EXPECT_EQ(Err(R"("function_call":"auto")").param, "function_call");
  EXPECT_EQ(Err(R"("guided_whitespace_pattern":" ")").param, "guided_whitespace_pattern");
  EXPECT_EQ(Err(R"("structural_tag":{})").param, "structural_tag");
  // null means absent, as everywhere in the API.
  EXPECT_EQ(Ok(R"("functions":null,"response_format":null)").sampling.structured.kind, Kind::kNone);
}

TEST(StructuredOutputRequest, LogitBias) {
  GenerationRequest g = Ok(R"("logit_bias":{"15":-100,"7":2.5})");
  ASSERT_EQ(g.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(g.sampling.logit_bias[0], (std::pair<int32_t, float>{15, -100.0f}));
  EXPECT_EQ(g.sampling.logit_bias[1], (std::pair<int32_t, float>{7, 2.5f}));
  EXPECT_EQ(Err(R"("logit_bias":{"a":1})").param, "logit_bias");
  EXPECT_EQ(Err(R"("logit_bias":{"-1":1})").param, "logit_bias");
  EXPECT_EQ(Err(R"("logit_bias":{"1":101})").param, "logit_bias");
  EXPECT_EQ(Err(R"("logit_bias":{"1":"x"})").param, "logit_bias");
  EXPECT_EQ(Err(R"("logit_bias":[1])").param, "logit_bias");
}

}  // namespace
}  // namespace jisu::server
