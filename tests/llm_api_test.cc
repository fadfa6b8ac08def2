// The public API's chat-template override (LlmOptions::chat_template): chats render through the
// given template, and a template that does not parse is refused by Open. Structured output
// through SamplingParams::structured.
#include <gtest/gtest.h>
#include <jisu/llm.h>

#include "tests/test_util.h"

namespace jisu {
namespace {

LlmOptions TinyOptions() {
  LlmOptions o;
  o.model = (testing::SourceDir() / "models" / "tiny-llama").string();
  o.device = "cpu";
  o.num_threads = 1;
  o.kv_memory = "16MiB";
  o.max_model_len = 256;
  return o;
}

TEST(LlmApiTest, ChatTemplateOverrideRendersMessages) {
  LlmOptions o = TinyOptions();
  o.chat_template = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}";
  auto llm = Llm::Open(o);
  ASSERT_TRUE(llm.ok()) << llm.status().ToString();
  LlmRequest r;
  r.messages = {{"user", "def main():"}};
  r.sampling.temperature = 0;
  r.sampling.max_tokens = 1;
  auto out = (*llm)->Generate(r);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->num_prompt_tokens,
            static_cast<int64_t>((*llm)->Tokenize("<user>def main():", false).size()));

  // The model's own template (a default system prompt) renders a longer prompt.
  auto own = Llm::Open(TinyOptions());
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  auto own_out = (*own)->Generate(r);
  ASSERT_TRUE(own_out.ok()) << own_out.status().ToString();
  EXPECT_GT(own_out->num_prompt_tokens, out->num_prompt_tokens);
}

TEST(LlmApiTest, BrokenChatTemplateIsRefused) {
  LlmOptions o = TinyOptions();
  o.chat_template = "{% for m in messages %}{{ m.content }}";
  auto llm = Llm::Open(o);
  ASSERT_FALSE(llm.ok());
  EXPECT_EQ(llm.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(llm.status().message().find("chat_template"), std::string::npos)
      << llm.status().message();
}

TEST(LlmApiTest, StructuredOutputThroughSamplingParams) {
  auto llm = Llm::Open(TinyOptions());
  ASSERT_TRUE(llm.ok()) << llm.status().ToString();
  LlmRequest r;
  r.prompt = "x = ";
  r.sampling.temperature = 0.7f;
  r.sampling.seed = 5;
  r.sampling.max_tokens = 64;
  r.sampling.structured.kind = StructuredOutput::Kind::kRegex;
  r.sampling.structured.text = "\\[[0-9], [0-9]\\]";
  auto out = (*llm)->Generate(r);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->finish_reason, FinishReason::kStop);
  ASSERT_EQ(out->text.size(), 6u) << out->text;
  EXPECT_EQ(out->text[0], '[');
  EXPECT_EQ(out->text.substr(2, 2), ", ");
  EXPECT_EQ(out->text[5], ']');
  r.sampling.structured.kind = StructuredOutput::Kind::kJsonSchema;
  r.sampling.structured.text = R"({"type":"object","dependentRequired":{}})";
  auto bad = (*llm)->Submit(r);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace jisu
