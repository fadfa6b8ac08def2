#include "engine/tenant_registry.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

namespace jisu {
namespace {

TEST(TenantRegistry, DenseStableIdsAndEmptyIsZero) {
  TenantRegistry r(16);
  EXPECT_EQ(r.Intern(""), 0);
  const TenantId a = r.Intern("alice");
  const TenantId b = r.Intern("bob");
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2);
  EXPECT_EQ(r.Intern("alice"), a);
  EXPECT_EQ(r.size(), 2u);
}

TEST(TenantRegistry, FloodOfNamesSharesTheOverflowTenant) {
  TenantRegistry r(8);
  std::set<TenantId> ids;
  for (int i = 0; i < 1000; ++i) {
    const TenantId t = r.Intern("user-" + std::to_string(i));
    EXPECT_GE(t, 1);
    EXPECT_LT(t, 8);
    ids.insert(t);
  }
  EXPECT_EQ(ids.size(), 7u);  // 1..6 interned, 7 the overflow
  EXPECT_EQ(r.Intern("user-999"), r.overflow_tenant());
  EXPECT_EQ(r.Intern("user-0"), 1);  // early names keep their own id
  EXPECT_EQ(r.size(), 6u);
}

TEST(TenantRegistry, ConcurrentInterningAgrees) {
  TenantRegistry r(1024);
  std::vector<std::vector<TenantId>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) got[t].push_back(r.Intern("u" + std::to_string(i)));
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 1; t < 4; ++t) EXPECT_EQ(got[t], got[0]);
  EXPECT_EQ(r.size(), 200u);
}

}  // namespace
}  // namespace jisu
