// The bf16 GEMM for F16/BF16 prefill (matmul_bf16.h): MatMul on that path against a double
// reference on the same bf16-rounded operands (tight), and against the exact product (the
// rounding bound). Skipped where the CPU has no AVX512_BF16.
#include "ops/matmul_bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "ops/matmul.h"
#include "ops/matmul_int.h"
#include "ops/matmul_interleaved.h"
#include "ops/matmul_kernels.h"
#include "ops/quant.h"

namespace jisu {
namespace {

using matmul_internal::ActPath;
using matmul_internal::ForceActPath;
using matmul_internal::ForcePath;
using matmul_internal::Path;

float Bf16Round(float f) {
  uint32_t pair;
  const float two[2] = {f, 0.0f};
  matmul_internal::RoundToBf16Pairs(two, 2, &pair);
  return Bf16ToF32(static_cast<uint16_t>(pair & 0xffff));
}

TEST(Bf16RoundTest, NearestEvenAndSpecials) {
  EXPECT_EQ(Bf16Round(1.0f), 1.0f);
  EXPECT_EQ(Bf16Round(1.0f + 1.0f / 256), 1.0f);               // tie -> even (down)
  EXPECT_EQ(Bf16Round(1.0f + 3.0f / 256), 1.0f + 4.0f / 256);  // tie -> even (up)
  EXPECT_EQ(Bf16Round(1.0f + 1.5f / 256), 1.0f + 2.0f / 256);  // above the tie
  EXPECT_EQ(Bf16Round(-3.0f), -3.0f);
  EXPECT_TRUE(std::isinf(Bf16Round(INFINITY)));
  EXPECT_TRUE(std::isnan(Bf16Round(NAN)));
  // The portable and AVX-512 rounding agree on normal numbers (any CPU: the latter falls back).
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> v(70);
  for (float& x : v) x = nd(rng);
  std::vector<uint32_t> a(35), b(35);
  matmul_internal::RoundToBf16Pairs(v.data(), 70, a.data());
  if (matmul_internal::Avx512Bf16Gemm() != nullptr) {
    matmul_internal::Avx512RoundToBf16Pairs(v.data(), 70, b.data());
    EXPECT_EQ(a, b);
  }
}

class MatMulBf16Test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (matmul_internal::Avx512Bf16Gemm() == nullptr) GTEST_SKIP() << "no AVX512_BF16 here";
    ForceActPath(ActPath::kInt8);  // reduced-precision activations allowed
  }
  void TearDown() override {
    ForceActPath(std::nullopt);
    ForcePath(std::nullopt);
  }
};

void Check(DType dtype, int64_t rows, int64_t cols, int64_t tokens, bool interleave) {
  std::mt19937 rng(static_cast<uint32_t>(rows * 31 + cols * 7 + tokens));
  std::normal_distribution<float> nd(0.0f, 0.5f);
  const size_t row_bytes = RowBytes(dtype, static_cast<uint64_t>(cols)).value();
  std::vector<uint8_t> bytes(row_bytes * rows);
  std::vector<float> deq(static_cast<size_t>(rows * cols)), src(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : src) v = nd(rng);
    QuantizeRow(dtype, src.data(), bytes.data() + r * row_bytes, cols);
    DequantizeRow(dtype, bytes.data() + r * row_bytes, &deq[r * cols], cols);
  }
  const int64_t xs = cols + 2, ys = rows + 3;
  std::vector<float> x(static_cast<size_t>(tokens * xs));
  for (float& v : x) v = nd(rng);

  WeightMatrix w{dtype, bytes.data(), rows, cols, row_bytes};
  std::vector<uint8_t> il;
  std::string what = std::string(DTypeName(dtype)) + " " + std::to_string(rows) + "x" +
                     std::to_string(cols) + " tokens=" + std::to_string(tokens);
  if (interleave) {
    if (InterleavedBytes(w) == 0) return;
    il.resize(InterleavedBytes(w) + 64);
    auto* aligned =
        reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(il.data()) + 63) / 64 * 64);
    ThreadPool pool(1);
    InterleaveWeights(w, aligned, pool);
    w.interleaved = aligned;
    what += " interleaved";
  }
  static ThreadPool pool1(1), pool2(2), pool3(3);
  for (ThreadPool* pool : {&pool1, &pool2, &pool3}) {
    ForcePath(Path::kGemm);
    std::vector<float> y(static_cast<size_t>(tokens * ys), -12345.0f);
    MatMul(w, x.data(), xs, tokens, y.data(), ys, *pool);
    const std::string where = what + " threads=" + std::to_string(pool->num_threads());
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t o = 0; o < rows; ++o) {
        double rounded = 0, exact = 0, scale = 0;
        for (int64_t i = 0; i < cols; ++i) {
          const double wi = deq[o * cols + i], xi = x[t * xs + i];
          rounded += static_cast<double>(Bf16Round(deq[o * cols + i])) * Bf16Round(x[t * xs + i]);
          exact += wi * xi;
          scale += std::fabs(wi * xi);
        }
        const double got = y[t * ys + o];
        // fp32 accumulation of exact products: far inside 1e-6 * sum|w x| for these sizes.
        ASSERT_LE(std::fabs(got - rounded), 1e-6 * scale + 1e-30)
            << where << " token " << t << " row " << o << ": not the bf16 product";
        // Both operands rounded to 8 significant bits: |err| <= (2^-8 + 2^-8) * sum|w x|.
        ASSERT_LE(std::fabs(got - exact), (2.0 / 256 + 1e-6) * scale + 1e-30)
            << where << " token " << t << " row " << o;
      }
      for (int64_t o = rows; o < ys; ++o) ASSERT_EQ(y[t * ys + o], -12345.0f) << where;
    }
    // The automatic choice for a prefill-sized step takes the same path: identical bits.
    ForcePath(std::nullopt);
    if (tokens >= 20) {
      std::vector<float> y2(y.size(), -12345.0f);
      MatMul(w, x.data(), xs, tokens, y2.data(), ys, *pool);
      ASSERT_EQ(0, std::memcmp(y.data(), y2.data(), y.size() * sizeof(float))) << where;
    }
  }
}

// Rows not a multiple of the 32-row panel or the 128-row chunk; columns across one and several
// 256-deep slices with a partial last one (also an odd pair count: 288 = 256 + 32, 2 x 1001 + 2
// not multiple of 32, so only the rows path there); token counts not multiples of the 12-token
// tile, and one above a 96-token block.
TEST_F(MatMulBf16Test, F16AndBf16AgainstRoundedReference) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    for (auto [rows, cols] :
         {std::pair<int64_t, int64_t>{1, 32}, {45, 288}, {131, 544}, {260, 320}, {33, 2004}}) {
      for (int64_t tokens : {1, 13, 20, 101}) {
        for (bool il : {false, true}) {
          Check(dt, rows, cols, tokens, il);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// JISU_MATMUL=float's switch (ForceActPath(kFloat)) keeps the exact float GEMM.
TEST_F(MatMulBf16Test, FloatSwitchKeepsExactPath) {
  ForceActPath(ActPath::kFloat);
  const int64_t rows = 40, cols = 256, tokens = 24;
  std::vector<uint16_t> w(rows * cols);
  std::vector<float> x(tokens * cols), y(tokens * rows);
  for (size_t i = 0; i < w.size(); ++i) w[i] = F32ToF16(1.0f + 1.0f / 1024);  // not a bf16
  for (float& v : x) v = 1.0f;
  ThreadPool pool(2);
  MatMul(WeightMatrix{DType::kF16, w.data(), rows, cols, cols * 2}, x.data(), cols, tokens,
         y.data(), rows, pool);
  for (float v : y) ASSERT_EQ(v, 256.0f * (1.0f + 1.0f / 1024));
  ForceActPath(ActPath::kInt8);
  MatMul(WeightMatrix{DType::kF16, w.data(), rows, cols, cols * 2}, x.data(), cols, tokens,
         y.data(), rows, pool);
  for (float v : y) ASSERT_EQ(v, 256.0f);  // 1 + 2^-10 rounds to 1 in bf16
}

}  // namespace
}  // namespace jisu
