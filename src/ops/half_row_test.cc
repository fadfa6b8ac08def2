// F32ToF16Row: the F16C path bit-identical to the scalar round-to-nearest-even conversion on odd
// lengths, and both round (not truncate) at and around ties.
#include "ops/half_row.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/half.h"

namespace jisu {
namespace {

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

TEST(HalfRowTest, RoundsToNearestEvenNotTruncates) {
  // 1 + 2^-11 is halfway between 1 and the next half 1 + 2^-10: the tie goes to even (1).
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: the tie goes to even (up).
  // Just above a tie rounds up; truncation would give the lower neighbour in all but the first.
  const float in[] = {1.0f + 0x1p-11f,
                      1.0f + 3 * 0x1p-11f,
                      1.0f + 0x1p-11f + 0x1p-20f,
                      -(1.0f + 0x1p-11f + 0x1p-20f),
                      65519.0f,
                      65520.0f,
                      0x1p-25f,
                      0x1p-24f * 1.5f};
  const uint16_t want[] = {0x3c00, 0x3c02, 0x3c01, 0xbc01, 0x7bff, 0x7c00, 0x0000, 0x0002};
  constexpr int n = sizeof(in) / sizeof(in[0]);
  uint16_t portable[n], vec[n];
  half_row_internal::F32ToF16RowPortable(in, portable, n);
  const bool ran = half_row_internal::F32ToF16RowF16c(in, vec, n);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(portable[i], want[i]) << "portable, input " << in[i];
    if (ran) {
      EXPECT_EQ(vec[i], want[i]) << "f16c, input " << in[i];
    }
  }
  if (!ran) GTEST_SKIP() << "no F16C here";
}

TEST(HalfRowTest, F16cMatchesPortableOnOddLengths) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> bits;
  std::normal_distribution<float> normal(0.0f, 3.0f);
  bool ran = false;
  for (int64_t n : {1, 7, 8, 9, 31, 64, 1001}) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) {
      // Half the values are arbitrary bit patterns (subnormals, huge, inf), half typical
      // activations; NaNs are left out (payloads may differ).
      float f = i % 2 ? FromBits(bits(rng)) : normal(rng);
      if (std::isnan(f)) f = std::numeric_limits<float>::infinity();
      x[i] = f;
    }
    std::vector<uint16_t> portable(n), vec(n);
    half_row_internal::F32ToF16RowPortable(x.data(), portable.data(), n);
    ran = half_row_internal::F32ToF16RowF16c(x.data(), vec.data(), n);
    if (!ran) break;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(vec[i], portable[i]) << "n " << n << " i " << i << " x " << x[i];
    }
  }
  if (!ran) GTEST_SKIP() << "no F16C here";
}

}  // namespace
}  // namespace jisu
