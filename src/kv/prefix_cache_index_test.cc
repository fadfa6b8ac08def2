#include "kv/prefix_cache_index.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace jisu {
namespace {

TEST(BlockHashIndexTest, MatchesUnorderedMapUnderHeavyCollisions) {
  BlockHashIndex index(64);  // 128 slots
  std::unordered_map<uint64_t, int32_t> model;
  std::mt19937_64 rng(7);
  for (int step = 0; step < 20000; ++step) {
    // Keys share their low bits often, so probe runs are long and wrap around.
    const uint64_t key = ((rng() % 40) << 7) | (rng() % 4 == 0 ? 127 : rng() % 3);
    if (rng() % 2 == 0 && static_cast<int64_t>(model.size()) < 64) {
      const int32_t value = static_cast<int32_t>(rng() % 1000);
      const bool inserted = index.Insert(key, value);
      EXPECT_EQ(inserted, model.emplace(key, value).second);
    } else {
      EXPECT_EQ(index.Erase(key), model.erase(key) == 1);
    }
    ASSERT_EQ(index.size(), static_cast<int64_t>(model.size()));
    if (step % 97 == 0) {
      for (uint64_t k = 0; k < 40; ++k) {
        for (uint64_t low : {0ull, 1ull, 2ull, 127ull}) {
          const uint64_t probe = (k << 7) | low;
          auto it = model.find(probe);
          ASSERT_EQ(index.Find(probe), it == model.end() ? -1 : it->second) << step;
        }
      }
    }
  }
}

}  // namespace
}  // namespace jisu
