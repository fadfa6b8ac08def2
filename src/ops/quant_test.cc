#include "ops/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tests/test_paths.h"

namespace jisu {
namespace {

// Fixture written by tools/make_quant_fixtures.py from gguf.quants (see its docstring).
struct QuantFixture {
  DType dtype;
  uint32_t rows = 0, cols = 0, row_bytes = 0;
  std::vector<float> src;
  std::vector<uint8_t> quant;
  std::vector<float> deq;
};

bool LoadFixture(const std::string& name, QuantFixture* f) {
  std::ifstream in(jisu::testing::TestDataPath("ops/" + name), std::ios::binary);
  if (!in) return false;
  char magic[4];
  uint32_t hdr[4];
  in.read(magic, 4);
  in.read(reinterpret_cast<char*>(hdr), sizeof hdr);
  if (!in || std::memcmp(magic, "JQF1", 4) != 0) return false;
  f->dtype = static_cast<DType>(hdr[0]);
  f->rows = hdr[1];
  f->cols = hdr[2];
  f->row_bytes = hdr[3];
  if (f->rows > 4096 || f->cols > 65536 || f->row_bytes > 65536 * 4) return false;
  const size_t n = size_t{f->rows} * f->cols;
  f->src.resize(n);
  f->quant.resize(size_t{f->rows} * f->row_bytes);
  f->deq.resize(n);
  in.read(reinterpret_cast<char*>(f->src.data()), static_cast<std::streamsize>(n * 4));
  in.read(reinterpret_cast<char*>(f->quant.data()), static_cast<std::streamsize>(f->quant.size()));
  in.read(reinterpret_cast<char*>(f->deq.data()), static_cast<std::streamsize>(n * 4));
  return static_cast<bool>(in) && in.peek() == EOF;
}

uint32_t Bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

class QuantFixtureTest : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantFixtureTest, MatchesGgufQuantsBitExactly) {
  QuantFixture f;
  ASSERT_TRUE(LoadFixture(GetParam(), &f)) << GetParam();
  ASSERT_TRUE(IsSupportedWeightType(f.dtype));
  ASSERT_EQ(RowBytes(f.dtype, f.cols).value(), f.row_bytes);

  std::vector<uint8_t> q(f.row_bytes);
  std::vector<float> d(f.cols);
  int byte_mismatches = 0;
  for (uint32_t r = 0; r < f.rows; ++r) {
    const float* src = &f.src[size_t{r} * f.cols];
    const uint8_t* want_q = &f.quant[size_t{r} * f.row_bytes];
    const float* want_d = &f.deq[size_t{r} * f.cols];

    QuantizeRow(f.dtype, src, q.data(), f.cols);
    for (uint32_t i = 0; i < f.row_bytes; ++i) {
      if (q[i] != want_q[i] && ++byte_mismatches <= 10) {
        ADD_FAILURE() << GetParam() << " row " << r << " byte " << i << ": got " << int{q[i]}
                      << " want " << int{want_q[i]};
      }
    }

    DequantizeRow(f.dtype, want_q, d.data(), f.cols);
    for (uint32_t i = 0; i < f.cols; ++i) {
      if (std::isnan(want_d[i])) {
        EXPECT_TRUE(std::isnan(d[i])) << GetParam() << " row " << r << " col " << i;
      } else {
        // Bitwise, so that -0.0 vs 0.0 also counts.
        EXPECT_EQ(Bits(d[i]), Bits(want_d[i]))
            << GetParam() << " row " << r << " col " << i << ": " << d[i] << " vs " << want_d[i];
      }
    }
  }
  EXPECT_EQ(byte_mismatches, 0);
}

INSTANTIATE_TEST_SUITE_P(Gguf, QuantFixtureTest,
                         ::testing::Values("q8_0.bin", "q4_0.bin", "q4_1.bin", "f16.bin",
                                           "bf16.bin"));

TEST(QuantTest, SupportedTypes) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1,
                  DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    EXPECT_TRUE(IsSupportedWeightType(t)) << DTypeName(t);
  }
  for (DType t :
       {DType::kQ5_0, DType::kQ5_1, DType::kQ8_1, DType::kQ8_K, DType::kI8, DType::kF64}) {
    EXPECT_FALSE(IsSupportedWeightType(t)) << DTypeName(t);
  }
}

TEST(QuantTest, F32RoundTripIsIdentity) {
  std::vector<float> src = {1.5f, -0.0f, 3e38f, -1e-45f, 7.0f, INFINITY};
  std::vector<float> q(src.size()), d(src.size());
  QuantizeRow(DType::kF32, src.data(), q.data(), static_cast<int64_t>(src.size()));
  DequantizeRow(DType::kF32, q.data(), d.data(), static_cast<int64_t>(src.size()));
  for (size_t i = 0; i < src.size(); ++i) EXPECT_EQ(Bits(d[i]), Bits(src[i]));
}

// Hand-checked layout: nibble order and scale placement.
TEST(QuantTest, Q4_0LayoutByHand) {
  float x[kQK];
  for (int i = 0; i < kQK; ++i) x[i] = static_cast<float>(i % 16) - 8.0f;  // -8..7
  BlockQ4_0 b;
  QuantizeRow(DType::kQ4_0, x, &b, kQK);
  // max |x| is -8 (first), d = -8 / -8 = 1, id = 1: q = trunc(x + 8.5) = x + 8.
  EXPECT_EQ(b.d, 0x3c00);  // 1.0 in f16
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], j | (j << 4)) << j;
  float y[kQK];
  DequantizeRow(DType::kQ4_0, &b, y, kQK);
  for (int i = 0; i < kQK; ++i) EXPECT_EQ(y[i], x[i]);
}

TEST(QuantTest, Q8_0RoundsHalfAwayFromZero) {
  float x[kQK] = {};
  x[0] = 127.0f;  // d = 1
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.5f;
  BlockQ8_0 b;
  QuantizeRow(DType::kQ8_0, x, &b, kQK);
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 3);
  EXPECT_EQ(b.qs[2], -3);
  EXPECT_EQ(b.qs[3], 1);
}

}  // namespace
}  // namespace jisu
