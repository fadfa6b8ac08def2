// MatMul on K-quant weights (Q2_K .. Q6_K) against the double-precision product of the
// reference dequantization, on every ISA this machine runs, 1 and 2 threads, dot and GEMM
// paths, row counts that are not multiples of any tile and token counts across the dot/GEMM
// switch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ops/matmul.h"
#include "ops/matmul_int.h"
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

// |y - exact| <= kRelTol * sum_i |w_i x_i|: any float summation order stays far inside this,
// while one wrong weight (sub-)block moves a result by ~|w x| * 16, far outside.
constexpr double kRelTol = 1e-6;

// The float-activation kernels; the integer decode path for Q4_K/Q5_K/Q6_K is tested in
// matmul_int_test.cc (its results carry the activation rounding, outside this tolerance).
class MatMulKQuantTest : public ::testing::Test {
 protected:
  void TearDown() override {
    ForceIsa(std::nullopt);
    ForcePath(std::nullopt);
  }
};

void Check(DType dtype, int64_t rows, int64_t cols, double* worst) {
  std::mt19937 rng(static_cast<uint32_t>(rows * 31 + cols + static_cast<int>(dtype)));
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  const size_t row_bytes = RowBytes(dtype, static_cast<uint64_t>(cols)).value();
  std::vector<uint8_t> bytes(row_bytes * rows);
  std::vector<float> deq(static_cast<size_t>(rows * cols)), src(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : src) v = normal(rng);
    QuantizeRow(dtype, src.data(), bytes.data() + r * row_bytes, cols);
    DequantizeRow(dtype, bytes.data() + r * row_bytes, &deq[r * cols], cols);
  }
  WeightMatrix w{dtype, bytes.data(), rows, cols, row_bytes};

  static ThreadPool pool1(1), pool2(2);
  for (int64_t tokens : {1, 2, 3, 4, 5, 17, 40}) {
    const int64_t x_stride = cols + 3, y_stride = rows + 5;
    std::vector<float> x(static_cast<size_t>(tokens * x_stride));
    for (auto& v : x) v = uni(rng);
    std::vector<double> ref(static_cast<size_t>(tokens * rows)), scale(ref.size());
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t o = 0; o < rows; ++o) {
        double s = 0, a = 0;
        for (int64_t i = 0; i < cols; ++i) {
          const double p = static_cast<double>(deq[o * cols + i]) * x[t * x_stride + i];
          s += p;
          a += std::fabs(p);
        }
        ref[t * rows + o] = s;
        scale[t * rows + o] = a;
      }
    }
    for (Isa isa : matmul_internal::kAllIsas) {
      if (!IsaAvailable(isa)) continue;
      ForceIsa(isa);
      for (ThreadPool* pool : {&pool1, &pool2}) {
        for (Path path : {Path::kDot, Path::kGemm}) {
          ForcePath(path);
          const std::string where = std::string(DTypeName(dtype)) + " " + std::to_string(rows) +
                                    "x" + std::to_string(cols) +
                                    " tokens=" + std::to_string(tokens) + " isa=" + IsaName(isa) +
                                    " threads=" + std::to_string(pool->num_threads()) +
                                    (path == Path::kDot ? " dot" : " gemm");
          std::vector<float> y(static_cast<size_t>(tokens * y_stride), -12345.0f);
          MatMul(w, x.data(), x_stride, tokens, y.data(), y_stride, *pool, nullptr,
                 {.path = MatmulPath::kFloat});
          for (int64_t t = 0; t < tokens; ++t) {
            for (int64_t o = 0; o < rows; ++o) {
              const double err = std::fabs(y[t * y_stride + o] - ref[t * rows + o]);
              const double tol = kRelTol * scale[t * rows + o] + 1e-30;
              ASSERT_LE(err, tol) << where << " token " << t << " row " << o << ": got "
                                  << y[t * y_stride + o] << " want " << ref[t * rows + o];
              *worst = std::max(*worst, err / tol);
            }
            for (int64_t o = rows; o < y_stride; ++o) {
              ASSERT_EQ(y[t * y_stride + o], -12345.0f) << where << " wrote past row end";
            }
          }
        }
      }
    }
  }
  ForceIsa(std::nullopt);
  ForcePath(std::nullopt);
}

void RunType(DType dtype) {
  double worst = 0;
  // Rows not multiples of any tile (nr 8/16/32, 128-row GEMM tasks); one to several blocks.
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{1, 256}, {7, 512}, {45, 2048}, {131, 768}, {33, 1280}}) {
    Check(dtype, rows, cols, &worst);
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::printf("  %s: worst |err| / tol = %.3g (tol = %.0e * sum|w*x|)\n",
              std::string(DTypeName(dtype)).c_str(), worst, kRelTol);
}

TEST_F(MatMulKQuantTest, Q4_K) { RunType(DType::kQ4_K); }
TEST_F(MatMulKQuantTest, Q5_K) { RunType(DType::kQ5_K); }
TEST_F(MatMulKQuantTest, Q6_K) { RunType(DType::kQ6_K); }
TEST_F(MatMulKQuantTest, Q2_K) { RunType(DType::kQ2_K); }
TEST_F(MatMulKQuantTest, Q3_K) { RunType(DType::kQ3_K); }

// The vector kernels' dequantization (GEMM panels) is bit-identical to DequantizeRow.
TEST_F(MatMulKQuantTest, VectorDequantIsBitExact) {
  std::mt19937 rng(5);
  for (DType dtype : {DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    const int64_t n = 4 * 256;
    std::vector<uint8_t> bytes(RowBytes(dtype, n).value());
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    // Finite f16 scales (random bits could be NaN).
    const int64_t bb = Traits(dtype).block_bytes;
    for (int64_t b = 0; b < n / 256; ++b) {
      uint8_t* blk = bytes.data() + b * bb;
      const uint16_t h = static_cast<uint16_t>(0x2000 + (rng() & 0x0fff));  // ~1e-3 .. 4e-3
      if (dtype == DType::kQ6_K) {
        std::memcpy(blk + 208, &h, 2);
      } else if (dtype == DType::kQ2_K) {
        std::memcpy(blk + 80, &h, 2);
        std::memcpy(blk + 82, &h, 2);
      } else if (dtype == DType::kQ3_K) {
        std::memcpy(blk + 108, &h, 2);
      } else {
        std::memcpy(blk, &h, 2);
        std::memcpy(blk + 2, &h, 2);
      }
    }
    std::vector<float> ref(n);
    DequantizeRow(dtype, bytes.data(), ref.data(), n);
    const auto kind = matmul_internal::WeightKindOf(dtype).value();
    for (Isa isa : matmul_internal::kAllIsas) {
      if (!IsaAvailable(isa)) continue;
      ForceIsa(isa);
      std::vector<float> got(n, NAN);
      matmul_internal::ActiveKernelSet().dequant[kind](bytes.data(), got.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::memcmp(&got[i], &ref[i], 4), 0)
            << DTypeName(dtype) << " " << IsaName(isa) << " element " << i << ": " << got[i]
            << " vs " << ref[i];
      }
    }
  }
}

}  // namespace
}  // namespace jisu
