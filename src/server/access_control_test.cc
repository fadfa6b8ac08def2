#include "server/access_control.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace jisu::server {
namespace {

constexpr char kAcme[] = "sk-acme-0123456789abcdef";
constexpr char kBeta[] = "sk-beta-fedcba9876543210";
constexpr char kOps[] = "sk-ops-00000000000000000";

class AccessControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The process id, not gtest's random seed: ctest runs each test in its own process, and two
    // started in the same millisecond got the same seed and removed each other's file.
    path_ = std::filesystem::temp_directory_path() /
            ("jisu_access_" + std::to_string(::getpid()) + ".txt");
    std::ofstream f(path_);
    f << kAcme << " tenant=acme rpm=1 concurrency=1\n"
      << kBeta << " tenant=beta tpm=100\n"
      << kOps << " tenant=ops metrics\n";
  }
  void TearDown() override { std::filesystem::remove(path_); }

  std::unique_ptr<AccessControl> Make(AccessOptions o) {
    auto ac = AccessControl::Create(o, [this] { return now_; });
    EXPECT_TRUE(ac.ok()) << ac.status().ToString();
    return ac.ok() ? std::move(ac).value() : nullptr;
  }
  static std::string Bearer(const char* key) { return std::string("Bearer ") + key; }

  std::filesystem::path path_;
  int64_t now_ = 0;
};

TEST_F(AccessControlTest, NoKeysLetsEveryoneInAndTheUserFieldNamesTheTenant) {
  auto ac = Make({});
  EXPECT_EQ(ac->scope(), CacheScope::kGlobal);
  EXPECT_FALSE(ac->Authorize("", true));
  Caller c;
  EXPECT_FALSE(ac->Admit("", &c));
  ac->NameTenant("alice", &c);
  EXPECT_EQ(c.tenant, "alice");
  EXPECT_EQ(c.cache_salt, "");  // global: shared across tenants, as before keys existed
}

TEST_F(AccessControlTest, OneSharedKeyGuardsV1AndMetricsButKeepsTheUserTenant) {
  AccessOptions o;
  o.api_key = "secret";
  auto ac = Make(o);
  auto no = ac->Authorize("Bearer wrong", false);
  ASSERT_TRUE(no);
  EXPECT_EQ(no->error.http_status, 401);
  EXPECT_EQ(no->error.code, "invalid_api_key");
  EXPECT_TRUE(ac->Authorize("", true));
  EXPECT_FALSE(ac->Authorize("Bearer secret", true));
  Caller c;
  EXPECT_TRUE(ac->Admit("Bearer secre", &c));
  EXPECT_FALSE(ac->Admit("Bearer secret", &c));
  ac->NameTenant("alice", &c);
  EXPECT_EQ(c.tenant, "alice");
}

TEST_F(AccessControlTest, KeysFileNamesTheTenantAndSaltsTheCacheByDefault) {
  AccessOptions o;
  o.api_keys_path = path_.string();
  auto ac = Make(o);
  EXPECT_EQ(ac->scope(), CacheScope::kTenant);
  Caller a, b;
  ASSERT_FALSE(ac->Admit(Bearer(kAcme), &a));
  ASSERT_FALSE(ac->Admit(Bearer(kBeta), &b));
  ac->NameTenant("beta", &a);  // the user field no longer picks the tenant
  ac->NameTenant("", &b);
  EXPECT_EQ(a.tenant, "acme");
  EXPECT_EQ(b.tenant, "beta");
  EXPECT_FALSE(a.cache_salt.empty());
  EXPECT_NE(a.cache_salt, b.cache_salt);
  const std::string acme_salt = a.cache_salt;
  a = Caller();      // the request ended: acme's one slot is free
  now_ += 60000000;  // and its rpm refilled
  Caller a2;
  ASSERT_FALSE(ac->Admit(Bearer(kAcme), &a2));
  ac->NameTenant("someone-else", &a2);
  EXPECT_EQ(a2.tenant, "acme");
  EXPECT_EQ(a2.cache_salt, acme_salt);  // same tenant, same salt: it keeps its own hits
}

TEST_F(AccessControlTest, GlobalScopeIsAnExplicitOptIn) {
  AccessOptions o;
  o.api_keys_path = path_.string();
  o.cache_scope = "global";
  auto ac = Make(o);
  Caller a;
  ASSERT_FALSE(ac->Admit(Bearer(kAcme), &a));
  ac->NameTenant("", &a);
  EXPECT_EQ(a.tenant, "acme");
  EXPECT_EQ(a.cache_salt, "");
}

TEST_F(AccessControlTest, MetricsNeedAKeyMarkedMetrics) {
  AccessOptions o;
  o.api_keys_path = path_.string();
  auto ac = Make(o);
  auto no = ac->Authorize(Bearer(kAcme), true);
  ASSERT_TRUE(no);
  EXPECT_EQ(no->error.http_status, 403);
  EXPECT_FALSE(ac->Authorize(Bearer(kAcme), false));
  EXPECT_FALSE(ac->Authorize(Bearer(kOps), true));
  no = ac->Authorize("", true);
  ASSERT_TRUE(no);
  EXPECT_EQ(no->error.http_status, 401);
}

TEST_F(AccessControlTest, LimitsAnswer429WithRetryAfterInOpenAIsShape) {
  AccessOptions o;
  o.api_keys_path = path_.string();
  auto ac = Make(o);
  Caller first;
  ASSERT_FALSE(ac->Admit(Bearer(kAcme), &first));
  Caller second;
  auto no = ac->Admit(Bearer(kAcme), &second);  // concurrency 1
  ASSERT_TRUE(no);
  EXPECT_EQ(no->error.http_status, 429);
  EXPECT_EQ(no->error.code, "rate_limit_exceeded");
  EXPECT_EQ(no->retry_after_s, 1);
  first = Caller();                        // the first request ended
  no = ac->Admit(Bearer(kAcme), &second);  // now its 1 rpm
  ASSERT_TRUE(no);
  EXPECT_EQ(no->error.type, "requests");
  EXPECT_EQ(no->retry_after_s, 60);
  EXPECT_NE(no->error.message.find("requests per minute"), std::string::npos);

  Caller beta;
  ASSERT_FALSE(ac->Admit(Bearer(kBeta), &beta));
  EXPECT_FALSE(AccessControl::ChargePrompt(80, &beta));
  no = AccessControl::ChargePrompt(50, &beta);
  ASSERT_TRUE(no);
  EXPECT_EQ(no->error.type, "tokens");
  EXPECT_EQ(no->retry_after_s, 18);  // 30 more tokens at 100 per minute
  no = AccessControl::ChargePrompt(101, &beta);
  ASSERT_TRUE(no);
  EXPECT_EQ(no->retry_after_s, 0);  // never fits: no Retry-After
  EXPECT_NE(no->error.message.find("Request too large"), std::string::npos);
}

TEST_F(AccessControlTest, StartupErrorsAreClear) {
  AccessOptions both;
  both.api_key = "x";
  both.api_keys_path = path_.string();
  auto r = AccessControl::Create(both);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot be combined"), std::string::npos);
  AccessOptions scope;
  scope.cache_scope = "everyone";
  r = AccessControl::Create(scope);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--prefix-cache-scope"), std::string::npos);
  AccessOptions missing;
  missing.api_keys_path = "/nonexistent/keys";
  r = AccessControl::Create(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/keys"), std::string::npos);
}

}  // namespace
}  // namespace jisu::server
