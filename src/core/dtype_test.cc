#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/half.h"

namespace jisu {
namespace {

TEST(DTypeTest, RowBytesFollowsGgufBlockLayouts) {
  EXPECT_EQ(RowBytes(DType::kF32, 10), 40u);
  EXPECT_EQ(RowBytes(DType::kQ8_0, 64), 68u);
  EXPECT_EQ(RowBytes(DType::kQ4_0, 32), 18u);
  EXPECT_EQ(RowBytes(DType::kQ4_1, 64), 40u);
  EXPECT_EQ(RowBytes(DType::kQ4_K, 256), 144u);
  EXPECT_FALSE(RowBytes(DType::kQ4_0, 33).has_value());
  EXPECT_FALSE(RowBytes(DType::kF32, ~0ull).has_value());
}

TEST(DTypeTest, UnknownGgufTypeIsRejected) {
  EXPECT_FALSE(GetDTypeTraits(4).has_value());  // removed Q4_2
  EXPECT_FALSE(GetDTypeTraits(1000).has_value());
  ASSERT_TRUE(GetDTypeTraits(30).has_value());
  EXPECT_EQ(GetDTypeTraits(30)->name, "bf16");
  EXPECT_EQ(DTypeFromName("q4_1"), DType::kQ4_1);
}

TEST(HalfTest, RoundTripsAndRoundsToNearestEven) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333333f}) {
    const float back = F16ToF32(F32ToF16(f));
    EXPECT_NEAR(back, f, std::fabs(f) * 1e-3f + 1e-7f) << f;
  }
  EXPECT_EQ(F32ToF16(1.0f), 0x3c00);
  EXPECT_EQ(F32ToF16(1e6f), 0x7c00);  // overflow to inf
  EXPECT_EQ(F32ToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bf16ToF32(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties to even (1.0).
  EXPECT_EQ(F32ToBf16(1.00390625f), 0x3f80);
  for (uint32_t h = 0; h < 0x7c00; h += 7) {
    EXPECT_EQ(F32ToF16(F16ToF32(static_cast<uint16_t>(h))), h) << h;
  }
}

}  // namespace
}  // namespace jisu

namespace jisu {
namespace {

TEST(DTypeTest, GgufFileTypeCodesAreLlamaCpps) {
  EXPECT_EQ(GgufFileType(DType::kF32), 0u);
  EXPECT_EQ(GgufFileType(DType::kF16), 1u);
  EXPECT_EQ(GgufFileType(DType::kQ4_0), 2u);
  EXPECT_EQ(GgufFileType(DType::kQ8_0), 7u);
  EXPECT_EQ(GgufFileType(DType::kQ4_K), 14u);
  EXPECT_EQ(GgufFileType(DType::kQ6_K), 18u);
  EXPECT_EQ(GgufFileType(DType::kBF16), 32u);
}

}  // namespace
}  // namespace jisu
