// The load generator reads llama.cpp's llama-server unchanged. The streams below were recorded
// from llama-server (llama.cpp vendored by llama-cpp-python 0.3.36, 2026-12-01; model path
// shortened) and differ from jisu's: the chat role chunk has "content": null; the usage chunk
// carries "timings"; a text completion's last chunk has usage and finish_reason together; keys
// come in another order; a ":" comment line is the keep-alive ping; errors are {"error": {...}}
// with "code", "message", "type".
#include <gtest/gtest.h>

#include <string>

#include "loadgen/openai_stream.h"
#include "loadgen/sse_parser.h"

namespace jisu::loadgen {
namespace {

RequestResult Read(const std::string& stream) {
  RequestResult r;
  OpenAiStreamReader reader(&r);
  SseParser parser;
  double t = 0;
  parser.Feed(stream.data(), stream.size(), [&](std::string_view ev) {
    t += 0.01;
    reader.OnEvent(ev, t);
  });
  parser.Finish([&](std::string_view ev) { reader.OnEvent(ev, t); });
  EXPECT_TRUE(reader.done() || r.error != ErrorKind::kNone);
  return r;
}

TEST(LoadgenLlamaServer, ChatStream) {
  const std::string stream =
      R"(data: {"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"created":1796108425,"id":"chatcmpl-3Xnt","model":"/m/SmolLM2-135M-Instruct.Q4_1.gguf","system_fingerprint":"b0-unknown","object":"chat.completion.chunk"})"
      "\n\n"
      ":\n\n"
      R"(data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hello"}}],"created":1796108425,"id":"chatcmpl-3Xnt","model":"/m/SmolLM2-135M-Instruct.Q4_1.gguf","system_fingerprint":"b0-unknown","object":"chat.completion.chunk"})"
      "\n\n"
      R"(data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"!"}}],"created":1796108427,"id":"chatcmpl-3Xnt","model":"/m/SmolLM2-135M-Instruct.Q4_1.gguf","system_fingerprint":"b0-unknown","object":"chat.completion.chunk"})"
      "\n\n"
      R"(data: {"choices":[{"finish_reason":"length","index":0,"delta":{}}],"created":1796108432,"id":"chatcmpl-3Xnt","model":"/m/SmolLM2-135M-Instruct.Q4_1.gguf","system_fingerprint":"b0-unknown","object":"chat.completion.chunk"})"
      "\n\n"
      R"(data: {"choices":[],"created":1796108432,"id":"chatcmpl-3Xnt","model":"/m/SmolLM2-135M-Instruct.Q4_1.gguf","system_fingerprint":"b0-unknown","object":"chat.completion.chunk","usage":{"completion_tokens":2,"prompt_tokens":31,"total_tokens":33,"prompt_tokens_details":{"cached_tokens":7}},"timings":{"cache_n":7,"prompt_n":24,"prompt_ms":1920.5,"predicted_n":2,"predicted_ms":664.7}})"
      "\n\n"
      "data: [DONE]\n\n";
  const RequestResult r = Read(stream);
  EXPECT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.content_chunks, 2);  // the role chunk (content null) is not a token
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.02);
  EXPECT_EQ(r.prompt_tokens, 31);
  EXPECT_EQ(r.cached_tokens, 7);
  EXPECT_EQ(r.usage_completion_tokens, 2);
  EXPECT_EQ(r.output_tokens(), 2);
}

TEST(LoadgenLlamaServer, CompletionStreamWithUsageInTheLastChunk) {
  const std::string stream =
      R"(data: {"choices":[{"text":"bre","index":0,"logprobs":null,"finish_reason":null}],"created":1796108434,"model":"/m/x.gguf","system_fingerprint":"b0-unknown","object":"text_completion","id":"chatcmpl-Wy7O"})"
      "\n\n"
      R"(data: {"choices":[{"text":"a","index":0,"logprobs":null,"finish_reason":null}],"created":1796108435,"model":"/m/x.gguf","system_fingerprint":"b0-unknown","object":"text_completion","id":"chatcmpl-Wy7O"})"
      "\n\n"
      R"(data: {"choices":[{"text":" ","index":0,"logprobs":null,"finish_reason":null}],"created":1796108435,"model":"/m/x.gguf","system_fingerprint":"b0-unknown","object":"text_completion","id":"chatcmpl-Wy7O"})"
      "\n\n"
      R"(data: {"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"created":1796108435,"model":"/m/x.gguf","system_fingerprint":"b0-unknown","object":"text_completion","usage":{"completion_tokens":3,"prompt_tokens":3,"total_tokens":6,"prompt_tokens_details":{"cached_tokens":0}},"id":"chatcmpl-Wy7O","timings":{"cache_n":0,"prompt_n":3,"predicted_n":3}})"
      "\n\n"
      "data: [DONE]\n\n";
  const RequestResult r = Read(stream);
  EXPECT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.content_chunks, 3);
  EXPECT_EQ(r.prompt_tokens, 3);
  EXPECT_EQ(r.cached_tokens, 0);
  EXPECT_EQ(r.output_tokens(), 3);
}

TEST(LoadgenLlamaServer, InStreamErrorIsCounted) {
  // llama-server's format_oai_sse({"error": ...}) inside a 200 stream.
  const std::string stream =
      R"(data: {"error":{"code":500,"message":"context shift is disabled","type":"server_error"}})"
      "\n\n";
  const RequestResult r = Read(stream);
  EXPECT_EQ(r.error, ErrorKind::kStreamError);
  EXPECT_EQ(r.error_message, "context shift is disabled");
}

}  // namespace
}  // namespace jisu::loadgen
