// The hand-written chunk JSON must parse to exactly what the nlohmann tree used to produce.
#include "server/stream_chunk.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace jisu::server {
namespace {

using Json = nlohmann::json;

TEST(StreamChunk, JsonStringEscapesLikeNlohmann) {
  std::string all;
  for (int c = 1; c < 128; ++c) all.push_back(static_cast<char>(c));
  all += "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";  // é € 😀 stay verbatim
  for (const std::string& s : {std::string(), std::string("plain"), std::string("a\"b\\c\n"),
                               std::string(1, '\0') + "x", all}) {
    std::string out;
    AppendJsonString(s, &out);
    EXPECT_EQ(out, Json(s).dump());
    EXPECT_EQ(Json::parse(out).get<std::string>(), s);
  }
}

Json Parse(const std::string& line) {
  EXPECT_EQ(line.rfind("data: ", 0), 0u);
  EXPECT_EQ(line.substr(line.size() - 2), "\n\n");
  return Json::parse(line.substr(6, line.size() - 8));
}

TEST(StreamChunk, ChatAndCompletionChunkShapes) {
  StreamChunkFormatter chat(true, "chatcmpl-1", 1700000000, "tiny \"m\"", true);
  Json j = Parse(chat.Chunk(3, "he said \"hi\"\n", ""));
  const Json expected = {{"id", "chatcmpl-1"},
                         {"object", "chat.completion.chunk"},
                         {"created", 1700000000},
                         {"model", "tiny \"m\""},
                         {"choices",
                          {{{"index", 3},
                            {"delta", {{"content", "he said \"hi\"\n"}}},
                            {"logprobs", nullptr},
                            {"finish_reason", nullptr}}}},
                         {"usage", nullptr}};
  EXPECT_EQ(j, expected);
  j = Parse(chat.Chunk(0, "", "length"));
  EXPECT_EQ(j["choices"][0]["delta"], Json::object());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");

  StreamChunkFormatter text(false, "cmpl-2", 5, "m", false);
  j = Parse(text.Chunk(0, "x", "stop"));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "x");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_FALSE(j.contains("usage"));
  j = Parse(text.Chunk(12, "", ""));
  EXPECT_EQ(j["choices"][0]["index"], 12);
  EXPECT_EQ(j["choices"][0]["text"], "");
}

}  // namespace
}  // namespace jisu::server
