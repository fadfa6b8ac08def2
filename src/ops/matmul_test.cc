#include "ops/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ops/matmul_int.h"
#include "ops/matmul_interleaved.h"
#include "ops/matmul_kernels.h"
#include "ops/quant.h"

namespace jisu {
namespace {

using matmul_internal::ForceIsa;
using matmul_internal::ForcePath;
using matmul_internal::Isa;
using matmul_internal::IsaAvailable;
using matmul_internal::IsaName;
using matmul_internal::Path;

struct TestWeights {
  DType dtype;
  int64_t rows, cols;
  std::vector<uint8_t> bytes;
  std::vector<float> deq;  // what the kernels must see: DequantizeRow of bytes
  WeightMatrix View() const {
    WeightMatrix w;
    w.dtype = dtype;
    w.data = bytes.data();
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = RowBytes(dtype, static_cast<uint64_t>(cols)).value();
    return w;
  }
};

TestWeights MakeWeights(DType dtype, int64_t rows, int64_t cols, std::mt19937& rng) {
  TestWeights w{dtype, rows, cols, {}, {}};
  const size_t row_bytes = RowBytes(dtype, static_cast<uint64_t>(cols)).value();
  w.bytes.resize(row_bytes * rows);
  w.deq.resize(static_cast<size_t>(rows * cols));
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> src(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : src) v = normal(rng);
    QuantizeRow(dtype, src.data(), w.bytes.data() + r * row_bytes, cols);
    DequantizeRow(dtype, w.bytes.data() + r * row_bytes, &w.deq[r * cols], cols);
  }
  return w;
}

// The float path (weights dequantized, float activations); the integer path for quantized
// weights is tested in matmul_int_test.cc.
constexpr MatMulOptions kFloat{.path = MatmulPath::kFloat};

class MatMulTest : public ::testing::Test {
 protected:
  void TearDown() override {
    ForceIsa(std::nullopt);
    ForcePath(std::nullopt);
  }
};

// |y - exact| <= kRelTol * sum_i |w_i x_i|: float accumulation in any order stays far inside
// this for random data (observed maxima are printed), while a single wrong weight block moves
// a result by ~|w x| * 32, far outside.
constexpr double kRelTol = 1e-6;

void CheckAgainstReference(const TestWeights& w, int64_t num_tokens, const std::string& what,
                           double* worst_ratio) {
  std::mt19937 rng(static_cast<uint32_t>(w.rows * 131 + w.cols * 7 + num_tokens));
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  const int64_t x_stride = w.cols + 3;  // strides larger than the data, to catch misuse
  const int64_t y_stride = w.rows + 5;
  std::vector<float> x(static_cast<size_t>(num_tokens * x_stride));
  for (auto& v : x) v = uni(rng);

  // Exact reference and per-output error scale, in double.
  std::vector<double> ref(static_cast<size_t>(num_tokens * w.rows));
  std::vector<double> scale(ref.size());
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t o = 0; o < w.rows; ++o) {
      double s = 0, a = 0;
      for (int64_t i = 0; i < w.cols; ++i) {
        const double p = static_cast<double>(w.deq[o * w.cols + i]) * x[t * x_stride + i];
        s += p;
        a += std::fabs(p);
      }
      ref[t * w.rows + o] = s;
      scale[t * w.rows + o] = a;
    }
  }

  // MatMulReference agrees with the double computation.
  {
    std::vector<float> y(static_cast<size_t>(num_tokens * y_stride), NAN);
    MatMulReference(w.View(), x.data(), x_stride, num_tokens, y.data(), y_stride);
    for (int64_t t = 0; t < num_tokens; ++t) {
      for (int64_t o = 0; o < w.rows; ++o) {
        ASSERT_NEAR(y[t * y_stride + o], ref[t * w.rows + o], 1e-6 * scale[t * w.rows + o] + 1e-30)
            << what;
      }
    }
  }

  // F16 / BF16: the 16-row interleaved copy (matmul_interleaved.h), built by the portable
  // repack on every machine; its portable dot against the reference here, MatMul on it below
  // where the CPU reads it.
  const auto kind = matmul_internal::WeightKindOf(w.dtype);
  std::vector<uint8_t> il_store;
  const uint8_t* il = nullptr;
  if (kind.has_value() && matmul_internal::IsIlFloatKind(*kind) &&
      matmul_internal::InterleavedBytes(*kind, w.rows, w.cols) > 0) {
    il_store.resize(matmul_internal::InterleavedBytes(*kind, w.rows, w.cols) + 64);
    auto* aligned =
        reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(il_store.data()) + 63) / 64 * 64);
    const int64_t groups = (w.rows + 15) / 16;
    matmul_internal::InterleaveGroups(*kind, w.bytes.data(), w.View().row_bytes, w.rows, w.cols, 0,
                                      groups, aligned);
    il = aligned;
    std::vector<float> y(static_cast<size_t>(num_tokens * y_stride), -12345.0f);
    for (int64_t t = 0; t < num_tokens; t += matmul_internal::kMaxDotTokens) {
      const int nt =
          static_cast<int>(std::min<int64_t>(matmul_internal::kMaxDotTokens, num_tokens - t));
      matmul_internal::FloatIlDotPortable(*kind, il, w.rows, w.cols / 32, 0, groups,
                                          x.data() + t * x_stride, x_stride, nt,
                                          y.data() + t * y_stride, y_stride);
    }
    for (int64_t t = 0; t < num_tokens; ++t) {
      for (int64_t o = 0; o < w.rows; ++o) {
        ASSERT_LE(std::fabs(y[t * y_stride + o] - ref[t * w.rows + o]),
                  kRelTol * scale[t * w.rows + o] + 1e-30)
            << what << " interleaved portable dot, token " << t << " row " << o;
      }
      for (int64_t o = w.rows; o < y_stride; ++o) ASSERT_EQ(y[t * y_stride + o], -12345.0f);
    }
  }
  WeightMatrix interleaved_view = w.View();
  if (il != nullptr && InterleavedBytes(w.View()) > 0) interleaved_view.interleaved = il;
  const WeightMatrix& interleaved = interleaved_view;

  std::vector<Isa> isas;
  for (Isa isa : matmul_internal::kAllIsas) {
    if (IsaAvailable(isa)) isas.push_back(isa);
  }
  static ThreadPool pool1(1), pool2(2), pool3(3);
  const WeightMatrix plain = w.View();
  for (const WeightMatrix* view : {&plain, &interleaved}) {
    if (view == &interleaved && interleaved.interleaved == nullptr) continue;
    const std::string copy = view == &interleaved ? " interleaved" : "";
    for (Isa isa : isas) {
      ForceIsa(isa);
      for (ThreadPool* pool : {&pool1, &pool2, &pool3}) {
        for (std::optional<Path> path : {std::optional<Path>(), std::optional<Path>(Path::kDot),
                                         std::optional<Path>(Path::kGemm)}) {
          ForcePath(path);
          const std::string where = what + copy + " isa=" + IsaName(isa) +
                                    " threads=" + std::to_string(pool->num_threads()) + " path=" +
                                    (!path                 ? "auto"
                                     : *path == Path::kDot ? "dot"
                                                           : "gemm");
          std::vector<float> y(static_cast<size_t>(num_tokens * y_stride), -12345.0f);
          MatMul(*view, x.data(), x_stride, num_tokens, y.data(), y_stride, *pool, nullptr, kFloat);
          for (int64_t t = 0; t < num_tokens; ++t) {
            for (int64_t o = 0; o < w.rows; ++o) {
              const double err = std::fabs(y[t * y_stride + o] - ref[t * w.rows + o]);
              const double tol = kRelTol * scale[t * w.rows + o] + 1e-30;
              ASSERT_LE(err, tol) << where << " token " << t << " row " << o << ": got "
                                  << y[t * y_stride + o] << " want " << ref[t * w.rows + o];
              *worst_ratio = std::max(*worst_ratio, err / tol);
            }
            // Padding between rows of y is untouched.
            for (int64_t o = w.rows; o < y_stride; ++o) {
              ASSERT_EQ(y[t * y_stride + o], -12345.0f) << where << " wrote past row end";
            }
          }
          if (view != &interleaved) continue;
          // The GEMM's panels packed from the copy hold the same floats in the same order as
          // those packed from the rows: bit-identical results.
          if (path == Path::kGemm) {
            std::vector<float> y_rows(y.size(), -12345.0f);
            MatMul(plain, x.data(), x_stride, num_tokens, y_rows.data(), y_stride, *pool, nullptr,
                   kFloat);
            ASSERT_EQ(0, std::memcmp(y.data(), y_rows.data(), y.size() * sizeof(float)))
                << where << ": GEMM on the copy differs from GEMM on the rows";
          }
          // Decode on the copy does not depend on how tokens are batched.
          if (path == Path::kDot && num_tokens > 1) {
            std::vector<float> y1(static_cast<size_t>(y_stride), -12345.0f);
            for (int64_t t = 0; t < num_tokens; ++t) {
              MatMul(*view, x.data() + t * x_stride, x_stride, 1, y1.data(), y_stride, *pool,
                     nullptr, kFloat);
              ASSERT_EQ(0, std::memcmp(y1.data(), y.data() + t * y_stride,
                                       static_cast<size_t>(w.rows) * sizeof(float)))
                  << where << ": token " << t << " alone differs from the batch";
            }
          }
        }
      }
    }
  }
  ForceIsa(std::nullopt);
  ForcePath(std::nullopt);
}

struct Shape {
  int64_t rows, cols;
};

void RunType(DType dtype, const std::vector<Shape>& shapes) {
  std::mt19937 rng(1234 + static_cast<uint32_t>(dtype));
  double worst = 0;
  for (const Shape& s : shapes) {
    const TestWeights w = MakeWeights(dtype, s.rows, s.cols, rng);
    for (int64_t tokens : {1, 2, 3, 5, 17, 64}) {
      const std::string what = std::string(DTypeName(dtype)) + " " + std::to_string(s.rows) + "x" +
                               std::to_string(s.cols) + " tokens=" + std::to_string(tokens);
      CheckAgainstReference(w, tokens, what, &worst);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  std::printf("  %s: worst |err| / tol = %.3g (tol = %.0e * sum|w*x|)\n",
              std::string(DTypeName(dtype)).c_str(), worst, kRelTol);
}

// Rows not multiples of any tile (nr = 8/16/32, 128-row tasks), cols across one and several
// 256-deep slices, including a partial last slice.
const std::vector<Shape> kBlockShapes = {{1, 32}, {7, 96}, {45, 4096}, {131, 288}, {33, 544}};
// Float types take any column count. 260 x 300: three row chunks and two slices, so batched
// decode (17, 64 tokens) runs on activations packed once per call and shared by the tasks.
// Columns in multiples of 32 also get F16/BF16's interleaved copy: 17 x 96 (a partial second
// group of 16 rows), 260 x 320 (GEMM over three row chunks and a partial second slice).
const std::vector<Shape> kFloatShapes = {{1, 32},   {3, 1},   {7, 13},    {45, 4096}, {131, 300},
                                         {33, 544}, {20, 47}, {260, 300}, {17, 96},   {260, 320}};

TEST_F(MatMulTest, F32) { RunType(DType::kF32, kFloatShapes); }
TEST_F(MatMulTest, F16) { RunType(DType::kF16, kFloatShapes); }
TEST_F(MatMulTest, BF16) { RunType(DType::kBF16, kFloatShapes); }
TEST_F(MatMulTest, Q8_0) { RunType(DType::kQ8_0, kBlockShapes); }
TEST_F(MatMulTest, Q4_0) { RunType(DType::kQ4_0, kBlockShapes); }
TEST_F(MatMulTest, Q4_1) { RunType(DType::kQ4_1, kBlockShapes); }

TEST_F(MatMulTest, SmallExampleByHand) {
  // W = [[1, 2, 3], [-1, 0, 0.5]], x = [[1, 1, 1], [2, -1, 4]] -> y = [[6, -0.5], [12, 0]]
  const float wdata[] = {1, 2, 3, -1, 0, 0.5f};
  const float x[] = {1, 1, 1, 2, -1, 4};
  WeightMatrix w{DType::kF32, wdata, 2, 3, 12};
  ThreadPool pool(2);
  for (Isa isa : matmul_internal::kAllIsas) {
    if (!IsaAvailable(isa)) continue;
    ForceIsa(isa);
    for (Path path : {Path::kDot, Path::kGemm}) {
      ForcePath(path);
      float y[4] = {};
      MatMul(w, x, 3, 2, y, 2, pool, nullptr, kFloat);
      EXPECT_EQ(y[0], 6.0f) << IsaName(isa);
      EXPECT_EQ(y[1], -0.5f) << IsaName(isa);
      EXPECT_EQ(y[2], 12.0f) << IsaName(isa);
      EXPECT_EQ(y[3], 0.0f) << IsaName(isa);
    }
  }
}

TEST_F(MatMulTest, ZeroTokensIsNoOp) {
  const float wdata[32] = {};
  WeightMatrix w{DType::kF32, wdata, 1, 32, 128};
  ThreadPool pool(1);
  float y = 7.0f;
  MatMul(w, nullptr, 32, 0, &y, 1, pool);
  EXPECT_EQ(y, 7.0f);
}

// A larger prefill-like problem on the automatic path: many row chunks and token blocks.
TEST_F(MatMulTest, LargerPrefillQ4_1) {
  std::mt19937 rng(99);
  const TestWeights w = MakeWeights(DType::kQ4_1, 300, 1024, rng);
  double worst = 0;
  CheckAgainstReference(w, 200, "q4_1 300x1024 tokens=200", &worst);
}

// F16 prefill on the float GEMM with activations packed once per call: several token blocks
// (203 tokens: not a multiple of any mr), row chunks whose last one is not a multiple of any nr
// (301 rows), and 1001 columns: a partial last slice whose depth is not a multiple of the
// vector transposes' 8 or 16.
TEST_F(MatMulTest, LargerPrefillF16OddSizes) {
  std::mt19937 rng(7);
  const TestWeights w = MakeWeights(DType::kF16, 301, 1001, rng);
  double worst = 0;
  CheckAgainstReference(w, 203, "f16 301x1001 tokens=203", &worst);
}

// A call's own float_activations equals the float path bit for bit, whatever the call's path,
// and differs from the int8 path it replaces (so the option is honoured); the auto path of a
// 40-token step is the int8 one.
TEST(MatMulOptionsTest, FloatActivationsPerCall) {
  std::mt19937 rng(5);
  const TestWeights w = MakeWeights(DType::kQ8_0, 96, 512, rng);
  const int64_t tokens = 40;
  std::vector<float> x(static_cast<size_t>(tokens * 512));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng);
  ThreadPool pool(2);
  const size_t n = static_cast<size_t>(tokens * 96);
  std::vector<float> per_call(n), float_path(n), int8(n), automatic(n);
  MatMul(w.View(), x.data(), 512, tokens, per_call.data(), 96, pool, nullptr,
         MatMulOptions{.float_activations = true, .path = MatmulPath::kInt8});
  MatMul(w.View(), x.data(), 512, tokens, int8.data(), 96, pool, nullptr,
         {.path = MatmulPath::kInt8});
  MatMul(w.View(), x.data(), 512, tokens, float_path.data(), 96, pool, nullptr, kFloat);
  MatMul(w.View(), x.data(), 512, tokens, automatic.data(), 96, pool);
  EXPECT_EQ(std::memcmp(per_call.data(), float_path.data(), n * sizeof(float)), 0);
  EXPECT_NE(std::memcmp(per_call.data(), int8.data(), n * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(automatic.data(), int8.data(), n * sizeof(float)), 0);
}

// One process, two paths: calls on different paths interleave without either changing the
// other's results (nothing is process-wide).
TEST(MatMulOptionsTest, PathsInterleave) {
  std::mt19937 rng(6);
  const TestWeights w = MakeWeights(DType::kQ4_0, 64, 256, rng);
  std::vector<float> x(256);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng);
  ThreadPool pool(2);
  std::vector<float> f1(64), i1(64), f2(64), i2(64);
  MatMul(w.View(), x.data(), 256, 1, f1.data(), 64, pool, nullptr, kFloat);
  MatMul(w.View(), x.data(), 256, 1, i1.data(), 64, pool, nullptr, {.path = MatmulPath::kInt8});
  MatMul(w.View(), x.data(), 256, 1, f2.data(), 64, pool, nullptr, kFloat);
  MatMul(w.View(), x.data(), 256, 1, i2.data(), 64, pool, nullptr, {.path = MatmulPath::kInt8});
  EXPECT_EQ(f1, f2);
  EXPECT_EQ(i1, i2);
  EXPECT_NE(f1, i1);
}

}  // namespace
}  // namespace jisu
