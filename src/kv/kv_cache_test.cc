// KvCache: Store puts each head's row where Head's view (the attention kernels' addressing)
// finds it, in either element type, F16 rounded to nearest even; sizes follow the type.
#include "kv/kv_cache.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/half.h"

namespace jisu {
namespace {

// A distinct value per (layer, block, slot, head, d) of the shape below (2, 3, 4, 3, 5), still
// distinct after rounding to half (indices < 360 are a whole unit apart, the half ulp there is
// at most 0.25), with a third that needs rounding.
float ValueAt(int64_t layer, int64_t block, int64_t slot, int64_t head, int64_t d, bool key) {
  const int64_t index = (((layer * 3 + block) * 4 + slot) * 3 + head) * 5 + d;
  return (key ? 1.0f : -1.0f) * (static_cast<float>(index) + 1.0f / 3.0f);
}

float Read(const PagedKvHead& kv, const void* base, int64_t block, int64_t slot, int64_t head_dim,
           int64_t d) {
  const int64_t at = block * kv.block_stride + slot * head_dim + d;
  return kv.type == KvType::kF16 ? F16ToF32(static_cast<const uint16_t*>(base)[at])
                                 : static_cast<const float*>(base)[at];
}

class KvCacheTest : public ::testing::TestWithParam<KvType> {};

TEST_P(KvCacheTest, StoreWritesWhereHeadReads) {
  const KvType type = GetParam();
  const KvCacheShape shape{2, 3, 5, 4, 3, type};  // odd head_dim, 3 KV heads
  auto cache = KvCache::Create(shape);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  std::vector<float> k(shape.num_kv_heads * shape.head_dim), v(k.size());
  for (int64_t l = 0; l < shape.num_layers; ++l) {
    for (int32_t b = 0; b < shape.num_blocks; ++b) {
      for (int64_t s = 0; s < shape.block_size; ++s) {
        for (int64_t h = 0; h < shape.num_kv_heads; ++h) {
          for (int64_t d = 0; d < shape.head_dim; ++d) {
            k[h * shape.head_dim + d] = ValueAt(l, b, s, h, d, true);
            v[h * shape.head_dim + d] = ValueAt(l, b, s, h, d, false);
          }
        }
        (*cache)->Store(l, b, s, k.data(), v.data());
      }
    }
  }
  // Every slot written once, so any overlap or misplaced row shows as a wrong value.
  for (int64_t l = 0; l < shape.num_layers; ++l) {
    for (int64_t h = 0; h < shape.num_kv_heads; ++h) {
      const PagedKvHead kv = (*cache)->Head(l, h);
      EXPECT_EQ(kv.type, type);
      EXPECT_EQ(kv.block_size, shape.block_size);
      for (int64_t b = 0; b < shape.num_blocks; ++b) {
        for (int64_t s = 0; s < shape.block_size; ++s) {
          for (int64_t d = 0; d < shape.head_dim; ++d) {
            float wk = ValueAt(l, b, s, h, d, true), wv = ValueAt(l, b, s, h, d, false);
            if (type == KvType::kF16) {
              wk = F16ToF32(F32ToF16(wk));
              wv = F16ToF32(F32ToF16(wv));
            }
            ASSERT_EQ(Read(kv, kv.keys, b, s, shape.head_dim, d), wk)
                << "layer " << l << " head " << h << " block " << b << " slot " << s;
            ASSERT_EQ(Read(kv, kv.values, b, s, shape.head_dim, d), wv);
          }
        }
      }
    }
  }
}

TEST_P(KvCacheTest, SizesFollowTheElementType) {
  const KvCacheShape shape{2, 3, 64, 16, 10, GetParam()};
  const uint64_t elem = GetParam() == KvType::kF16 ? 2 : 4;
  EXPECT_EQ(shape.BytesPerBlock(), 2ull * 2 * 3 * 64 * 16 * elem);
  auto cache = KvCache::Create(shape);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->TotalBytes(), 10 * shape.BytesPerBlock());
}

INSTANTIATE_TEST_SUITE_P(Types, KvCacheTest, ::testing::Values(KvType::kF16, KvType::kF32),
                         [](const auto& info) { return std::string(KvTypeName(info.param)); });

TEST(KvTypeTest, ParsesNames) {
  EXPECT_EQ(*ParseKvType("f16"), KvType::kF16);
  EXPECT_EQ(*ParseKvType("f32"), KvType::kF32);
  EXPECT_FALSE(ParseKvType("bf16").ok());
  EXPECT_EQ(kDefaultKvType, KvType::kF16);
}

}  // namespace
}  // namespace jisu
