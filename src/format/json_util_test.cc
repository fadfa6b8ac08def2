// ParseUntrustedJson: the one way files and answers from outside become nlohmann values.
#include "format/json_util.h"

#include <gtest/gtest.h>

#include <string>

namespace jisu {
namespace {

TEST(ParseUntrustedJsonTest, NestingPastTheBoundIsAnErrorNamingTheInput) {
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(ParseUntrustedJson<nlohmann::json>(ok, "x").ok());
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto r = ParseUntrustedJson<nlohmann::json>(deep, "config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("config.json"), std::string::npos);
  EXPECT_NE(r.status().message().find("deeper"), std::string::npos);
  // Brackets inside strings are text, not nesting.
  const std::string in_string = "{\"k\": \"" + std::string(1000, '[') + "\"}";
  EXPECT_TRUE(ParseUntrustedJson<nlohmann::json>(in_string, "x").ok());
}

TEST(ParseUntrustedJsonTest, InvalidTextIsAnErrorNotAnException) {
  for (const char* bad : {"", "{", "{\"a\": }", "[1, 2", "nul", "{\"a\": 1} x"}) {
    auto r = ParseUntrustedJson<nlohmann::ordered_json>(bad, "messages.json");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("messages.json"), std::string::npos);
  }
}

TEST(ParseUntrustedJsonTest, OrderedValuesKeepKeyOrderAndRepeatedKeysAreAccepted) {
  auto r = ParseUntrustedJson<nlohmann::ordered_json>(R"({"b": 1, "a": 2})", "x");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->dump(), R"({"b":1,"a":2})");
  // Config files written by hand may repeat a key; unlike ParseJson (tensor names), that is
  // not an error here.
  auto d = ParseUntrustedJson<nlohmann::json>(R"({"a": 1, "a": 2})", "x");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->contains("a"));
  EXPECT_FALSE(ParseJson(R"({"a": 1, "a": 2})").ok());
}

}  // namespace
}  // namespace jisu
