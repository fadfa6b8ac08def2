#include "server/api_keys.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace jisu::server {
namespace {

constexpr char kKeyA[] = "sk-acme-0123456789abcdef";
constexpr char kKeyB[] = "sk-beta-fedcba9876543210";

std::string ErrorOf(const std::string& text) {
  auto r = ApiKeys::Parse(text, "keys.txt");
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().message();
}

TEST(ApiKeys, ParsesKeysTenantsAndLimits) {
  const std::string text = std::string("# production keys\n\n") + kKeyA +
                           " tenant=acme rpm=60 tpm=40000 concurrency=4\r\n" + "   \t\n" + kKeyB +
                           "\ttenant=beta   metrics\n";
  auto r = ApiKeys::Parse(text, "keys.txt");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  const ApiKey& a = r->keys()[0];
  EXPECT_EQ(a.key, kKeyA);
  EXPECT_EQ(a.tenant, "acme");
  EXPECT_EQ(a.limits.requests_per_minute, 60);
  EXPECT_EQ(a.limits.tokens_per_minute, 40000);
  EXPECT_EQ(a.limits.max_concurrent, 4);
  EXPECT_FALSE(a.may_read_metrics);
  const ApiKey& b = r->keys()[1];
  EXPECT_EQ(b.tenant, "beta");
  EXPECT_EQ(b.limits.requests_per_minute, 0);  // unlimited
  EXPECT_EQ(b.limits.tokens_per_minute, 0);
  EXPECT_EQ(b.limits.max_concurrent, 0);
  EXPECT_TRUE(b.may_read_metrics);
}

TEST(ApiKeys, MatchesTheBearerHeaderOnly) {
  auto r = ApiKeys::Parse(std::string(kKeyA) + " tenant=a\n" + kKeyB + " tenant=b\n", "k");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->Match(std::string("Bearer ") + kKeyA), 0);
  EXPECT_EQ(r->Match(std::string("Bearer ") + kKeyB), 1);
  EXPECT_EQ(r->Match(kKeyA), -1);                                 // no scheme
  EXPECT_EQ(r->Match(std::string("Bearer ") + kKeyA + "x"), -1);  // longer
  EXPECT_EQ(r->Match(std::string("Bearer ") + std::string(kKeyA).substr(0, 20)), -1);
  EXPECT_EQ(r->Match(""), -1);
  EXPECT_EQ(r->Match("Bearer "), -1);
}

TEST(ApiKeys, ErrorsNameTheLineAndFieldButNeverTheKey) {
  const std::string k = kKeyA;
  struct Case {
    std::string text;
    std::string want;  // a substring of the message
  };
  const Case cases[] = {
      {"", "keys.txt: no keys"},
      {"# only a comment\n", "keys.txt: no keys"},
      {"\n" + k + "\n", "keys.txt:2: tenant: missing"},
      {k + " tenant=\n", "keys.txt:1: tenant: 1 to 64 characters"},
      {k + " tenant=" + std::string(65, 'a') + "\n", "tenant: 1 to 64"},
      {k + " tenant=a/b\n", "tenant: only A-Z"},
      {k + " tenant=a rpm=0\n", "keys.txt:1: rpm: must be an integer in [1, 1000000000], got '0'"},
      {k + " tenant=a tpm=-5\n", "tpm: must be an integer"},
      {k + " tenant=a concurrency=1.5\n", "concurrency: must be an integer"},
      {k + " tenant=a rpm=1000000001\n", "rpm: must be an integer"},
      {k + " tenant=a rpm=99999999999999999999\n", "rpm: must be an integer"},
      {k + " tenant=a rpm=\n", "rpm: must be an integer"},
      {k + " tenant=a rpms=5\n", "unknown field 'rpms=5'"},
      {k + " tenant=a metrics=yes\n", "unknown field 'metrics=yes'"},
      {k + " tenant=a tenant=b\n", "'tenant' is given twice"},
      {"short tenant=a\n", "keys.txt:1: key: the key has 5 characters; keys have 16 to 256"},
      {std::string(257, 'k') + " tenant=a\n", "the key has 257 characters"},
      {"sk-acme-0123456789abcde\xc3\xa9 tenant=a\n", "character 24 of the key is not one of"},
      {"sk-acme-0123456789a\"bcdef tenant=a\n", "character 20 of the key"},
      {k + " tenant=a\n\n" + k + " tenant=b\n", "keys.txt:3: key: the same key as line 1"},
      {k + " tenant=a\x01\n", "keys.txt:1: control character"},
  };
  for (const Case& c : cases) {
    const std::string message = ErrorOf(c.text);
    EXPECT_NE(message.find(c.want), std::string::npos) << "got: " << message;
    EXPECT_EQ(message.find("0123456789"), std::string::npos) << "leaks the key: " << message;
  }
}

TEST(ApiKeys, LoadNamesAMissingFile) {
  auto r = ApiKeys::Load("/nonexistent/keys.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/keys.txt: cannot open"), std::string::npos);

  const auto path = std::filesystem::temp_directory_path() / "jisu_api_keys_test.txt";
  {
    std::ofstream f(path);
    f << kKeyA << " tenant=acme\nbad\n";
  }
  r = ApiKeys::Load(path.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(path.string() + ":2: key:"), std::string::npos)
      << r.status().message();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace jisu::server
