#include "server/openai_protocol.h"

#include <gtest/gtest.h>

namespace jisu::server {
namespace {

GenerationRequest ParseOk(const std::string& body, Endpoint e) {
  GenerationRequest g;
  auto err = ParseGenerationRequest(body, e, &g);
  EXPECT_FALSE(err.has_value()) << (err ? err->message : "");
  return g;
}

ApiError ParseErr(const std::string& body, Endpoint e) {
  GenerationRequest g;
  auto err = ParseGenerationRequest(body, e, &g);
  EXPECT_TRUE(err.has_value()) << body;
  return err.value_or(ApiError{});
}

TEST(OpenAiProtocol, ChatFieldsAreRead) {
  auto g = ParseOk(R"({"model":"m","messages":[{"role":"system","content":"s"},
      {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
      "max_completion_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.1,
      "presence_penalty":1,"frequency_penalty":-1,"repetition_penalty":1.1,"stop":"x",
      "seed":42,"n":2,"logprobs":true,"top_logprobs":3,"user":"u","stream":true,
      "stream_options":{"include_usage":true},"ignore_eos":true,"unknown_field":{"x":1}})",
                   Endpoint::kChat);
  EXPECT_EQ(g.model, "m");
  ASSERT_EQ(g.messages.size(), 2u);
  EXPECT_EQ(g.messages[1]["content"], "ab");  // text parts joined
  EXPECT_EQ(g.max_tokens_given, 7);
  EXPECT_FLOAT_EQ(g.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(g.sampling.top_p, 0.9f);
  EXPECT_EQ(g.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(g.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(g.sampling.presence_penalty, 1.0f);
  EXPECT_FLOAT_EQ(g.sampling.frequency_penalty, -1.0f);
  EXPECT_FLOAT_EQ(g.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(g.sampling.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(g.sampling.seed, 42u);
  EXPECT_TRUE(g.sampling.ignore_eos);
  EXPECT_EQ(g.n, 2);
  EXPECT_EQ(g.top_logprobs, 3);
  EXPECT_TRUE(g.stream);
  EXPECT_TRUE(g.include_usage);
  EXPECT_EQ(g.user, "u");
}

TEST(OpenAiProtocol, CompletionPromptForms) {
  auto g = ParseOk(R"({"prompt":"hi","logprobs":2,"max_tokens":3})", Endpoint::kCompletion);
  ASSERT_EQ(g.prompts.size(), 1u);
  EXPECT_EQ(g.prompts[0].text, "hi");
  EXPECT_EQ(g.top_logprobs, 2);
  g = ParseOk(R"({"prompt":[1,2,3]})", Endpoint::kCompletion);
  ASSERT_EQ(g.prompts.size(), 1u);
  EXPECT_TRUE(g.prompts[0].is_tokens);
  EXPECT_EQ(g.prompts[0].tokens, (std::vector<int32_t>{1, 2, 3}));
  g = ParseOk(R"({"prompt":["a",[5,6]],"stop":["x","y"]})", Endpoint::kCompletion);
  ASSERT_EQ(g.prompts.size(), 2u);
  EXPECT_EQ(g.prompts[0].text, "a");
  EXPECT_EQ(g.prompts[1].tokens, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(g.sampling.stop.size(), 2u);
  EXPECT_EQ(g.top_logprobs, -1);
  EXPECT_EQ(g.max_tokens_given, -1);
  // null counts as absent
  g = ParseOk(R"({"prompt":"a","temperature":null,"stop":null})", Endpoint::kCompletion);
  EXPECT_FLOAT_EQ(g.sampling.temperature, 1.0f);
}

TEST(OpenAiProtocol, BadRequestsNameTheField) {
  struct Case {
    const char* body;
    Endpoint endpoint;
    const char* param;
  };
  const Case cases[] = {
      {R"({"messages":"hi"})", Endpoint::kChat, "messages"},
      {R"({})", Endpoint::kChat, "messages"},
      {R"({"messages":[{"role":"bot","content":"x"}]})", Endpoint::kChat, "messages[0].role"},
      {R"({"messages":[{"role":"user"}]})", Endpoint::kChat, "messages[0].content"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", Endpoint::kChat,
       "messages[0].content"},
      {R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", Endpoint::kChat,
       "top_logprobs"},
      {R"({"prompt":5})", Endpoint::kCompletion, "prompt"},
      {R"({"prompt":""})", Endpoint::kCompletion, "prompt"},
      {R"({"prompt":[1,-2]})", Endpoint::kCompletion, "prompt"},
      {R"({"prompt":"x","temperature":"hot"})", Endpoint::kCompletion, "temperature"},
      {R"({"prompt":"x","temperature":3})", Endpoint::kCompletion, "temperature"},
      {R"({"prompt":"x","top_p":0})", Endpoint::kCompletion, "top_p"},
      {R"({"prompt":"x","max_tokens":1.5})", Endpoint::kCompletion, "max_tokens"},
      {R"({"prompt":"x","max_tokens":0})", Endpoint::kCompletion, "max_tokens"},
      {R"({"prompt":"x","n":0})", Endpoint::kCompletion, "n"},
      {R"({"prompt":"x","stop":[1]})", Endpoint::kCompletion, "stop"},
      {R"({"prompt":"x","seed":"s"})", Endpoint::kCompletion, "seed"},
      {R"({"prompt":"x","stream":"yes"})", Endpoint::kCompletion, "stream"},
      {R"({"prompt":"x","logprobs":21})", Endpoint::kCompletion, "logprobs"},
      {R"({"prompt":"x","user":7})", Endpoint::kCompletion, "user"},
      {R"({"prompt":"x","model":1})", Endpoint::kCompletion, "model"},
      {R"({"prompt":"x","stream_options":{"include_usage":1}})", Endpoint::kCompletion,
       "stream_options.include_usage"},
  };
  for (const Case& c : cases) {
    ApiError e = ParseErr(c.body, c.endpoint);
    EXPECT_EQ(e.http_status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
  EXPECT_EQ(ParseErr("{oops", Endpoint::kChat).param, "");
  EXPECT_EQ(ParseErr("[1]", Endpoint::kChat).http_status, 400);
}

// A body nested past the bound is refused before nlohmann parses it (its destructor recurses
// once per level: a few MB of '[' would overflow the stack); nesting within the bound parses.
TEST(OpenAiProtocol, DeeplyNestedBodiesAreRefusedUpFront) {
  GenerationRequest req;
  const std::string deep =
      "{\"messages\":" + std::string(200000, '[') + std::string(200000, ']') + "}";
  auto err = ParseGenerationRequest(deep, Endpoint::kChat, &req);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->http_status, 400);
  EXPECT_NE(err->message.find("nested deeper"), std::string::npos) << err->message;
  // Brackets inside strings do not count.
  const std::string in_string =
      "{\"messages\":[{\"role\":\"user\",\"content\":\"" + std::string(1000, '[') + "\"}]}";
  EXPECT_FALSE(ParseGenerationRequest(in_string, Endpoint::kChat, &req).has_value());
  EXPECT_EQ(req.messages.size(), 1u);
}

TEST(OpenAiProtocol, JisuOptionsAreRead) {
  auto g = ParseOk(R"({"prompt":"x","jisu":{"matmul":"float","sampling":"host",
      "attention":"dense","weights":"","speculative":4}})",
                   Endpoint::kCompletion);
  EXPECT_EQ(g.options.matmul, MatmulPath::kFloat);
  EXPECT_EQ(g.options.sampling, SamplingPlacement::kHost);
  EXPECT_EQ(g.options.attention, AttentionVariant::kDense);
  EXPECT_EQ(g.options.weights, "");
  EXPECT_EQ(g.options.speculative, 4);
  g = ParseOk(R"({"messages":[{"role":"user","content":"x"}],"jisu":{"matmul":"int8"}})",
              Endpoint::kChat);
  EXPECT_EQ(g.options.matmul, MatmulPath::kInt8);
  EXPECT_EQ(g.options.sampling, SamplingPlacement::kAuto);
  EXPECT_FALSE(g.options.speculative.has_value());
  // Absent, null, {} and explicit autos are all auto.
  for (const char* body :
       {R"({"prompt":"x"})", R"({"prompt":"x","jisu":null})", R"({"prompt":"x","jisu":{}})",
        R"({"prompt":"x","jisu":{"matmul":null,"speculative":"auto","sampling":"auto"}})"}) {
    EXPECT_EQ(ParseOk(body, Endpoint::kCompletion).options, RequestOptions{}) << body;
  }
  // Names the engine does not hold still parse: the engine's check answers for them.
  EXPECT_EQ(
      ParseOk(R"({"prompt":"x","jisu":{"weights":"q4"}})", Endpoint::kCompletion).options.weights,
      "q4");
}

TEST(OpenAiProtocol, BadJisuOptionsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"("jisu":"float")", "jisu"},
      {R"("jisu":[1])", "jisu"},
      {R"("jisu":{"matmul":"fp8"})", "jisu.matmul"},
      {R"("jisu":{"matmul":1})", "jisu.matmul"},
      {R"("jisu":{"sampling":"gpu"})", "jisu.sampling"},
      {R"("jisu":{"attention":"sparse"})", "jisu.attention"},
      {R"("jisu":{"weights":4})", "jisu.weights"},
      {R"("jisu":{"weights":"has space"})", "jisu.weights"},
      {R"("jisu":{"speculative":-1})", "jisu.speculative"},
      {R"("jisu":{"speculative":65})", "jisu.speculative"},
      {R"("jisu":{"speculative":2.5})", "jisu.speculative"},
      {R"("jisu":{"speculative":"many"})", "jisu.speculative"},
      {R"("jisu":{"speculative":true})", "jisu.speculative"},
      {R"("jisu":{"matmull":"float"})", "jisu.matmull"},
      {R"("jisu":{"matmul":"float","extra":1})", "jisu.extra"},
  };
  for (const auto& [fields, param] : cases) {
    const std::string body = std::string(R"({"prompt":"x",)") + fields + "}";
    ApiError e = ParseErr(body, Endpoint::kCompletion);
    EXPECT_EQ(e.http_status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.message;
    EXPECT_NE(e.message.find(param), std::string::npos) << e.message;
  }
  ApiError e = ParseErr(R"({"prompt":"x","jisu":{"matmul":"fp8"}})", Endpoint::kCompletion);
  EXPECT_EQ(e.message, "'jisu.matmul' must be one of auto, float, int8 (got 'fp8')");
  e = ParseErr(R"({"prompt":"x","jisu":{"fast":true}})", Endpoint::kCompletion);
  EXPECT_NE(e.message.find("is not a jisu option"), std::string::npos) << e.message;
}

TEST(OpenAiProtocol, OptionErrorNamesTheField) {
  const ApiError e = OptionError(Status::InvalidArgument("weights names no weight set here"));
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.param, "jisu.weights");
  EXPECT_EQ(e.message, "'jisu.weights' names no weight set here");
}

TEST(OpenAiProtocol, ErrorJsonShape) {
  ApiError e = ApiError::NotFound("no such model", "model");
  const nlohmann::json j = e.ToJson();
  EXPECT_EQ(e.http_status, 404);
  EXPECT_EQ(j["error"]["message"], "no such model");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  const nlohmann::json b = ApiError::BadRequest("x").ToJson();
  EXPECT_TRUE(b["error"]["param"].is_null());
  EXPECT_TRUE(b["error"]["code"].is_null());
}

TEST(OpenAiProtocol, UsageShape) {
  const nlohmann::json u = UsageJson(10, 5, 8);
  EXPECT_EQ(u["prompt_tokens"], 10);
  EXPECT_EQ(u["completion_tokens"], 5);
  EXPECT_EQ(u["total_tokens"], 15);
  EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 8);
}

TEST(OpenAiProtocol, BearerCompare) {
  EXPECT_TRUE(BearerMatches("Bearer k3y", "k3y"));
  EXPECT_FALSE(BearerMatches("Bearer k3z", "k3y"));
  EXPECT_FALSE(BearerMatches("Bearer k3", "k3y"));
  EXPECT_FALSE(BearerMatches("Bearer k3yy", "k3y"));
  EXPECT_FALSE(BearerMatches("", "k3y"));
  EXPECT_FALSE(BearerMatches("k3y", "k3y"));
}

TEST(OpenAiProtocol, Utf8Sanitized) {
  EXPECT_EQ(ValidUtf8("ok"), "ok");
  EXPECT_EQ(ValidUtf8("a\xE2\x82"), "a\xEF\xBF\xBD");
  EXPECT_EQ(BytesJson("A\xFF"), nlohmann::json::array({65, 255}));
}

}  // namespace
}  // namespace jisu::server
