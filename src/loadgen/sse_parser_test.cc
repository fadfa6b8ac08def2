#include "loadgen/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace jisu::loadgen {
namespace {

std::vector<std::string> ParseInPieces(const std::string& stream, std::vector<size_t> cuts) {
  SseParser p;
  std::vector<std::string> events;
  auto on = [&](std::string_view d) { events.emplace_back(d); };
  size_t prev = 0;
  cuts.push_back(stream.size());
  for (size_t c : cuts) {
    p.Feed(stream.data() + prev, c - prev, on);
    prev = c;
  }
  p.Finish(on);
  return events;
}

TEST(LoadgenSse, EverySplitPointGivesTheSameEvents) {
  const std::string stream =
      ": keep-alive comment\r\n\r\n"
      "data: {\"a\":1}\r\n\r\n"
      "event: message\ndata:{\"b\":2}\n\n"
      "data: line1\ndata: line2\n\n"
      "data: {\"c\":\"x\\ny\"}\r\r"
      "data: [DONE]\n\n";
  const std::vector<std::string> want = {"{\"a\":1}", "{\"b\":2}", "line1\nline2",
                                         "{\"c\":\"x\\ny\"}", "[DONE]"};
  EXPECT_EQ(ParseInPieces(stream, {}), want);
  for (size_t i = 0; i <= stream.size(); ++i) {
    EXPECT_EQ(ParseInPieces(stream, {i}), want) << "split at " << i;
  }
  for (size_t i = 0; i + 2 <= stream.size(); ++i) {
    EXPECT_EQ(ParseInPieces(stream, {i, i + 1, i + 2}), want) << "splits at " << i;
  }
  std::vector<size_t> every_byte;
  for (size_t i = 1; i < stream.size(); ++i) every_byte.push_back(i);
  EXPECT_EQ(ParseInPieces(stream, every_byte), want);
}

TEST(LoadgenSse, FinalEventWithoutBlankLineIsDelivered) {
  EXPECT_EQ(ParseInPieces("data: [DONE]", {}), std::vector<std::string>{"[DONE]"});
  EXPECT_EQ(ParseInPieces("data: [DONE]\n", {}), std::vector<std::string>{"[DONE]"});
  EXPECT_TRUE(ParseInPieces(": only a comment\n\n\n", {}).empty());
  // "data" with no colon is an empty data line.
  EXPECT_EQ(ParseInPieces("data\n\n", {}), std::vector<std::string>{""});
}

}  // namespace
}  // namespace jisu::loadgen
