#include "core/huge_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace jisu {
namespace {

TEST(HugePageBufferTest, AlignedZeroedAndRoundedUp) {
  constexpr size_t kHuge = size_t{2} << 20;
  HugePageBuffer b(3 * kHuge + 5);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kHuge, 0u);
  EXPECT_EQ(b.size(), 4 * kHuge);
  const auto* p = static_cast<const uint8_t*>(b.data());
  for (size_t i = 0; i < b.size(); i += 4096) ASSERT_EQ(p[i], 0) << i;
  std::memset(b.data(), 0x5a, b.size());  // the whole rounded size is writable
  EXPECT_EQ(p[b.size() - 1], 0x5a);
}

// Pages of b resident in memory (mincore), out of all of them.
size_t ResidentPages(const HugePageBuffer& b) {
  std::vector<unsigned char> v(b.size() / 4096);
  if (mincore(b.data(), b.size(), v.data()) != 0) return ~size_t{0};
  size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

TEST(HugePageBufferTest, CommitFaultsInEveryPage) {
  constexpr size_t kHuge = size_t{2} << 20;
  for (int threads : {0, 1, 3, 64}) {
    HugePageBuffer b(5 * kHuge + 1);
    EXPECT_EQ(ResidentPages(b), 0u) << "untouched";
    b.Commit(threads);
    EXPECT_EQ(ResidentPages(b), b.size() / 4096) << "threads " << threads;
    const auto* p = static_cast<const uint8_t*>(b.data());
    for (size_t i = 0; i < b.size(); i += 1009) ASSERT_EQ(p[i], 0) << i;
  }
  HugePageBuffer empty;
  empty.Commit();  // nothing to do
}

TEST(HugePageBufferTest, EmptyAndMove) {
  HugePageBuffer empty(0);
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
  HugePageBuffer a(100);
  void* const where = a.data();
  static_cast<uint8_t*>(where)[7] = 9;
  HugePageBuffer b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.data(), where);
  HugePageBuffer c(1);
  c = std::move(b);  // releases c's own mapping, takes b's
  EXPECT_EQ(c.data(), where);
  EXPECT_EQ(static_cast<uint8_t*>(c.data())[7], 9);
}

}  // namespace
}  // namespace jisu
