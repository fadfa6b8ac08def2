// bf16 numerics for F16/BF16 weights (matmul_bf16.h): the pair layout of the interleaved copy
// (portable, every machine); MatMul on it against a double reference on the same bf16-rounded
// operands (tight) and against the exact product (the rounding bound); every token's outputs
// bit-identical alone and in steps of any size, on either path, with any thread count; and the
// switches that keep the exact float kernels. The MatMul checks skip where the CPU has no
// AVX512_BF16.
#include "ops/matmul_bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
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

// A random rows x cols matrix of `dtype` and its values as floats.
struct Matrix {
  DType dtype;
  int64_t rows, cols;
  size_t row_bytes;
  std::vector<uint8_t> bytes;
  std::vector<float> deq;
  WeightMatrix View() const { return WeightMatrix{dtype, bytes.data(), rows, cols, row_bytes}; }
};

Matrix MakeMatrix(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.5f);
  Matrix m{dtype, rows, cols, RowBytes(dtype, static_cast<uint64_t>(cols)).value(), {}, {}};
  m.bytes.resize(m.row_bytes * rows);
  m.deq.resize(static_cast<size_t>(rows * cols));
  std::vector<float> src(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : src) v = nd(rng);
    QuantizeRow(dtype, src.data(), m.bytes.data() + r * m.row_bytes, cols);
    DequantizeRow(dtype, m.bytes.data() + r * m.row_bytes, &m.deq[r * cols], cols);
  }
  return m;
}

// 64-byte-aligned storage for an interleaved copy.
struct Copy {
  std::vector<uint8_t> store;
  uint8_t* data = nullptr;
  explicit Copy(size_t n) : store(n + 64) {
    data = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(store.data()) + 63) / 64 * 64);
  }
};

// The pair layout holds, for row r and column pair p, bf16(W[r][2p]) | bf16(W[r][2p + 1]) << 16
// at word (r / 16 * pairs + p) * 16 + r % 16; padding rows are zero. Runs on every machine.
TEST(Bf16PairLayoutTest, WordsAreRoundedColumnPairs) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 32}, {17, 96}, {40, 320}}) {
      const Matrix m = MakeMatrix(dt, rows, cols, static_cast<uint32_t>(rows + cols));
      const auto kind = *matmul_internal::WeightKindOf(dt);
      Copy c(matmul_internal::InterleavedBytes(kind, rows, cols));
      const int64_t groups = (rows + 15) / 16;
      // Two calls over halves of the groups: the repack of one range leaves the others alone.
      matmul_internal::InterleaveGroups(kind, m.bytes.data(), m.row_bytes, rows, cols, 0,
                                        groups / 2, c.data, true);
      matmul_internal::InterleaveGroups(kind, m.bytes.data(), m.row_bytes, rows, cols, groups / 2,
                                        groups, c.data, true);
      const auto* words = reinterpret_cast<const uint32_t*>(c.data);
      const int64_t pairs = cols / 2;
      for (int64_t r = 0; r < groups * 16; ++r) {
        for (int64_t p = 0; p < pairs; ++p) {
          const uint32_t got = words[(r / 16 * pairs + p) * 16 + r % 16];
          uint32_t want = 0;
          if (r < rows) {
            const float two[2] = {m.deq[r * cols + 2 * p], m.deq[r * cols + 2 * p + 1]};
            matmul_internal::RoundToBf16Pairs(two, 2, &want);
          }
          ASSERT_EQ(got, want) << DTypeName(dt) << " " << rows << "x" << cols << " row " << r
                               << " pair " << p;
        }
      }
    }
  }
}

class MatMulBf16Test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (matmul_internal::Avx512Bf16Gemm() == nullptr) GTEST_SKIP() << "no AVX512_BF16 here";
  }
  void TearDown() override { ForcePath(std::nullopt); }
};

// MatMul on the copy InterleaveWeights makes under the default policy.
void Check(DType dtype, int64_t rows, int64_t cols, int64_t tokens) {
  const Matrix m = MakeMatrix(dtype, rows, cols, static_cast<uint32_t>(rows * 31 + cols * 7));
  std::mt19937 rng(static_cast<uint32_t>(tokens));
  std::normal_distribution<float> nd(0.0f, 0.5f);
  const int64_t xs = cols + 2, ys = rows + 3;
  std::vector<float> x(static_cast<size_t>(tokens * xs));
  for (float& v : x) v = nd(rng);

  WeightMatrix w = m.View();
  ASSERT_TRUE(InterleavesToBf16(w));
  Copy c(InterleavedBytes(w));
  ThreadPool load_pool(2);
  InterleaveWeights(w, c.data, load_pool);
  w.interleaved = c.data;
  w.interleaved_bf16 = true;
  const std::string what = std::string(DTypeName(dtype)) + " " + std::to_string(rows) + "x" +
                           std::to_string(cols) + " tokens=" + std::to_string(tokens);
  static ThreadPool pool1(1), pool2(2), pool3(3);
  // Each token alone, one thread: the reference bits for every other way of running it.
  std::vector<float> alone(static_cast<size_t>(tokens * ys), -12345.0f);
  for (int64_t t = 0; t < tokens; ++t) {
    MatMul(w, x.data() + t * xs, xs, 1, alone.data() + t * ys, ys, pool1);
  }
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t o = 0; o < rows; ++o) {
      double rounded = 0, exact = 0, scale = 0;
      for (int64_t i = 0; i < cols; ++i) {
        const double wi = m.deq[o * cols + i], xi = x[t * xs + i];
        rounded += static_cast<double>(Bf16Round(m.deq[o * cols + i])) * Bf16Round(x[t * xs + i]);
        exact += wi * xi;
        scale += std::fabs(wi * xi);
      }
      const double got = alone[t * ys + o];
      // fp32 accumulation of exact products: far inside 1e-6 * sum|w x| for these sizes.
      ASSERT_LE(std::fabs(got - rounded), 1e-6 * scale + 1e-30)
          << what << " token " << t << " row " << o << ": not the bf16 product";
      // Both operands rounded to 8 significant bits: |err| <= (2^-8 + 2^-8) * sum|w x|.
      ASSERT_LE(std::fabs(got - exact), (2.0 / 256 + 1e-6) * scale + 1e-30)
          << what << " token " << t << " row " << o;
    }
    for (int64_t o = rows; o < ys; ++o) ASSERT_EQ(alone[t * ys + o], -12345.0f) << what;
  }
  for (ThreadPool* pool : {&pool1, &pool2, &pool3}) {
    for (std::optional<Path> path : {std::optional<Path>(), std::optional<Path>(Path::kDot),
                                     std::optional<Path>(Path::kGemm)}) {
      ForcePath(path);
      const std::string where = what + " threads=" + std::to_string(pool->num_threads()) +
                                " path=" +
                                (!path                 ? "auto"
                                 : *path == Path::kDot ? "dot"
                                                       : "gemm");
      std::vector<float> y(alone.size(), -12345.0f);
      MatMul(w, x.data(), xs, tokens, y.data(), ys, *pool);
      for (int64_t t = 0; t < tokens; ++t) {
        ASSERT_EQ(0, std::memcmp(y.data() + t * ys, alone.data() + t * ys, sizeof(float) * ys))
            << where << ": token " << t << " in the step differs from the token alone";
      }
    }
  }
  ForcePath(std::nullopt);
}

// Rows not a multiple of the 16-row group, the 32-row panel (an odd group count) or the
// 128-row chunk; columns across one and several 128-pair slices with a partial last one; token
// counts below and above the dot/GEMM switch (20), not multiples of the 12-token tile or of the
// dot's 4, and one above a 96-token block.
TEST_F(MatMulBf16Test, F16AndBf16AgainstRoundedReferenceAndBatchInvariant) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 32},
                              {17, 96},
                              {45, 288},
                              {131, 544},
                              {260, 320},
                              {33, 2016}}) {
      for (int64_t tokens : {1, 2, 3, 5, 13, 20, 101}) {
        Check(dt, rows, cols, tokens);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Weights whose f16 value is not a bf16: 1 + 2^-10 becomes 1 in bf16 numerics, stays exact in
// the float kernels. y = 256 * w for 256 columns of ones.
constexpr float kNotBf16 = 1.0f + 1.0f / 1024;
std::vector<uint16_t> OnesTimes(float v, int64_t n) {
  return std::vector<uint16_t>(static_cast<size_t>(n), F32ToF16(v));
}

// A call on MatmulPath::kFloat keeps the exact float kernels: a pair copy is left for the rows,
// and a copy made for that path is the halves layout.
TEST_F(MatMulBf16Test, FloatSwitchKeepsExactKernels) {
  const int64_t rows = 40, cols = 256;
  const std::vector<uint16_t> wv = OnesTimes(kNotBf16, rows * cols);
  WeightMatrix w{DType::kF16, wv.data(), rows, cols, cols * 2};
  Copy pairs(InterleavedBytes(w));
  ThreadPool pool(2);
  ASSERT_TRUE(InterleavesToBf16(w));
  InterleaveWeights(w, pairs.data, pool);
  w.interleaved = pairs.data;
  w.interleaved_bf16 = true;
  for (int64_t tokens : {1, 24}) {
    std::vector<float> x(static_cast<size_t>(tokens * cols), 1.0f), y(tokens * rows);
    MatMul(w, x.data(), cols, tokens, y.data(), rows, pool);
    for (float v : y) ASSERT_EQ(v, 256.0f) << tokens << " tokens, bf16 numerics";
    MatMul(w, x.data(), cols, tokens, y.data(), rows, pool, nullptr, {.path = MatmulPath::kFloat});
    for (float v : y) ASSERT_EQ(v, 256.0f * kNotBf16) << tokens << " tokens, float path";
  }
  EXPECT_FALSE(InterleavesToBf16(w, MatmulPath::kFloat));
  Copy halves(InterleavedBytes(w));
  InterleaveWeights(w, halves.data, pool, MatmulPath::kFloat);
  w.interleaved = halves.data;
  w.interleaved_bf16 = false;
  for (int64_t tokens : {1, 24}) {  // a halves copy is read by the float kernels on every path
    std::vector<float> x(static_cast<size_t>(tokens * cols), 1.0f), y(tokens * rows);
    for (MatmulPath path : {MatmulPath::kAuto, MatmulPath::kInt8, MatmulPath::kFloat}) {
      MatMul(w, x.data(), cols, tokens, y.data(), rows, pool, nullptr, {.path = path});
      for (float v : y) ASSERT_EQ(v, 256.0f * kNotBf16) << tokens << " tokens, halves copy";
    }
  }
}

// Without a copy MatMul reads the rows with the float kernels.
TEST_F(MatMulBf16Test, NoCopyIsExact) {
  const int64_t rows = 40, cols = 256, tokens = 24;
  const std::vector<uint16_t> wv = OnesTimes(kNotBf16, rows * cols);
  std::vector<float> x(static_cast<size_t>(tokens * cols), 1.0f), y(tokens * rows);
  ThreadPool pool(2);
  MatMul(WeightMatrix{DType::kF16, wv.data(), rows, cols, cols * 2}, x.data(), cols, tokens,
         y.data(), rows, pool);
  for (float v : y) ASSERT_EQ(v, 256.0f * kNotBf16);
}

}  // namespace
}  // namespace jisu
