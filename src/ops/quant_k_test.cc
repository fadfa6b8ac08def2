// K-quant formats: dequantization against gguf-py (bit-exact, fixtures written by
// tools/make_kquant_fixtures.py) and the quality of our quantizer (relative RMS error on
// Gaussian rows, printed; bounds set just above what it achieves, so a regression fails).
#include "ops/quant_k.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "ops/quant.h"
#include "tests/test_util.h"

namespace jisu {
namespace {

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

void CheckFixture(DType dtype) {
  const std::string base =
      (testing::TestDataDir() / "ops" / "kquants" / std::string(DTypeName(dtype))).string();
  const std::vector<uint8_t> blocks = ReadFile(base + ".blocks");
  const std::vector<uint8_t> expected_bytes = ReadFile(base + ".f32");
  const int64_t block_bytes = Traits(dtype).block_bytes;
  ASSERT_FALSE(blocks.empty()) << "missing " << base << ".blocks";
  ASSERT_EQ(blocks.size() % block_bytes, 0u);
  const int64_t n = static_cast<int64_t>(blocks.size()) / block_bytes * kQK_K;
  ASSERT_EQ(expected_bytes.size(), static_cast<size_t>(n) * sizeof(float));
  std::vector<float> expected(static_cast<size_t>(n)), got(static_cast<size_t>(n));
  std::memcpy(expected.data(), expected_bytes.data(), expected_bytes.size());
  DequantizeRow(dtype, blocks.data(), got.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    // Bitwise: gguf-py's float32 operations are repeated exactly.
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &expected[i], 4);
    ASSERT_EQ(a, b) << DTypeName(dtype) << " element " << i << " (block " << i / kQK_K
                    << ", offset " << i % kQK_K << "): got " << got[i] << " want " << expected[i];
  }
}

TEST(QuantK, DequantizeQ2_KMatchesGgufPy) { CheckFixture(DType::kQ2_K); }
TEST(QuantK, DequantizeQ3_KMatchesGgufPy) { CheckFixture(DType::kQ3_K); }
TEST(QuantK, DequantizeQ4_KMatchesGgufPy) { CheckFixture(DType::kQ4_K); }
TEST(QuantK, DequantizeQ5_KMatchesGgufPy) { CheckFixture(DType::kQ5_K); }
TEST(QuantK, DequantizeQ6_KMatchesGgufPy) { CheckFixture(DType::kQ6_K); }

// Q5_0 is read by widening each block to Q8_0 (ops/quant.h): the widened blocks must
// dequantize to gguf-py's Q5_0 values bit for bit.
TEST(QuantK, WidenedQ5_0MatchesGgufPy) {
  const std::string base = (testing::TestDataDir() / "ops" / "kquants" / "q5_0").string();
  const std::vector<uint8_t> blocks = ReadFile(base + ".blocks");
  const std::vector<uint8_t> expected_bytes = ReadFile(base + ".f32");
  ASSERT_FALSE(blocks.empty()) << "missing " << base << ".blocks";
  ASSERT_EQ(blocks.size() % 22, 0u);
  const int64_t nb = static_cast<int64_t>(blocks.size()) / 22;
  ASSERT_EQ(expected_bytes.size(), static_cast<size_t>(nb) * kQK * sizeof(float));
  std::vector<BlockQ8_0> widened(static_cast<size_t>(nb));
  WidenQ5_0ToQ8_0(blocks.data(), widened.data(), nb);
  std::vector<float> got(static_cast<size_t>(nb * kQK));
  DequantizeRow(DType::kQ8_0, widened.data(), got.data(), nb * kQK);
  EXPECT_EQ(std::memcmp(got.data(), expected_bytes.data(), expected_bytes.size()), 0);
  for (int64_t i = 0; i < nb * kQK; ++i) {
    float want;
    std::memcpy(&want, expected_bytes.data() + i * 4, 4);
    ASSERT_EQ(got[i], want) << "element " << i;
  }
}

TEST(QuantK, RowBytesAndTraits) {
  EXPECT_EQ(RowBytes(DType::kQ4_K, 512).value(), 288u);
  EXPECT_EQ(RowBytes(DType::kQ5_K, 256).value(), 176u);
  EXPECT_EQ(RowBytes(DType::kQ6_K, 1024).value(), 840u);
  EXPECT_FALSE(RowBytes(DType::kQ4_K, 384).has_value());  // not a multiple of 256
  EXPECT_TRUE(IsSupportedWeightType(DType::kQ4_K));
  EXPECT_TRUE(IsSupportedWeightType(DType::kQ5_K));
  EXPECT_TRUE(IsSupportedWeightType(DType::kQ6_K));
  EXPECT_EQ(DTypeFromName("q6_k"), DType::kQ6_K);
}

// Relative RMS error ||x - deq(q(x))|| / ||x|| over Gaussian rows with a per-row scale spread
// (and a few outliers, as real weights have).
double RelRms(DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t n = 64 * kQK_K;
  std::vector<float> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) x[i] = normal(rng) * (0.01f + 0.002f * (i / 1024));
  for (int64_t i = 0; i < n; i += 997) x[i] *= 6.0f;
  std::vector<uint8_t> q(RowBytes(dtype, n).value());
  QuantizeRow(dtype, x.data(), q.data(), n);
  DequantizeRow(dtype, q.data(), y.data(), n);
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += (double{x[i]} - y[i]) * (double{x[i]} - y[i]);
    den += double{x[i]} * x[i];
  }
  return std::sqrt(num / den);
}

TEST(QuantK, QuantizerRmsError) {
  struct Case {
    DType dtype;
    double bound;
  };
  // For scale: Q4_0 (32-element blocks, symmetric, 4 bits) on the same data, as printed.
  for (const Case& c :
       {Case{DType::kQ2_K, 0.30}, Case{DType::kQ3_K, 0.17}, Case{DType::kQ4_K, 0.085},
        Case{DType::kQ5_K, 0.042}, Case{DType::kQ6_K, 0.021}, Case{DType::kQ4_0, 0.11},
        Case{DType::kQ8_0, 0.007}}) {
    const double e = RelRms(c.dtype, 7);
    std::printf("  %s: relative RMS error %.4f\n", std::string(DTypeName(c.dtype)).c_str(), e);
    EXPECT_LT(e, c.bound) << DTypeName(c.dtype);
  }
}

TEST(QuantK, EdgeBlocks) {
  for (DType dtype : {DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    std::vector<uint8_t> q(RowBytes(dtype, kQK_K).value());
    std::vector<float> x(kQK_K), y(kQK_K);
    // All zero -> exactly zero.
    QuantizeRow(dtype, x.data(), q.data(), kQK_K);
    DequantizeRow(dtype, q.data(), y.data(), kQK_K);
    for (float v : y) ASSERT_EQ(v, 0.0f) << DTypeName(dtype);
    // All positive, one sub-block zero, one huge value: finite, and the large value close.
    for (int i = 0; i < kQK_K; ++i) x[i] = 1.0f + 0.01f * i;
    for (int i = 32; i < 64; ++i) x[i] = 0.0f;
    x[200] = 1000.0f;
    QuantizeRow(dtype, x.data(), q.data(), kQK_K);
    DequantizeRow(dtype, q.data(), y.data(), kQK_K);
    for (int i = 0; i < kQK_K; ++i) ASSERT_TRUE(std::isfinite(y[i])) << DTypeName(dtype) << i;
    EXPECT_NEAR(y[200], 1000.0f, 1000.0f * 0.01f) << DTypeName(dtype);
    for (int i = 32; i < 64; ++i) EXPECT_NEAR(y[i], 0.0f, 0.05f) << DTypeName(dtype) << i;
  }
}

}  // namespace
}  // namespace jisu
