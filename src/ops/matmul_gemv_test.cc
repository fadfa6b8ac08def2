// The decode GEMV (matmul_gemv.h): the AVX-512 VNNI and AVX2 kernels against the portable kernel
// and against a double-precision product of the dequantized weights and quantized activations, on
// odd block counts (a half-empty last pair), row counts not multiples of the 4-row group and
// extreme values. (MatMulIntTest also runs it through MatMul for one token, 1-3 threads.)
#include "ops/matmul_gemv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ops/act_quant.h"
#include "ops/matmul_int.h"
#include "ops/quant.h"

namespace jisu::matmul_internal {
namespace {

void RunKind(DType dtype) {
  const WeightKind kind = *WeightKindOf(dtype);
  const GemvFn vec = Avx512VnniGemv(kind);
  const GemvFn vec2 = Avx2Gemv(kind);
  std::mt19937 rng(5 + static_cast<uint32_t>(dtype));
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::uniform_real_distribution<float> uni(-2.0f, 2.0f);
  double worst = 0, worst2 = 0;
  for (int64_t cols : {32, 64, 96, 544, 2080}) {
    for (int64_t rows : {1, 3, 4, 9, 33}) {
      for (bool extreme : {false, true}) {
        const size_t rb = RowBytes(dtype, static_cast<uint64_t>(cols)).value();
        std::vector<uint8_t> w(rb * rows);
        std::vector<float> deq(static_cast<size_t>(rows * cols)), src(cols), x(cols);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t i = 0; i < cols; ++i) {
            src[i] =
                extreme ? ((i % 32 == 0) ? -60000.0f : ((i & 1) ? 30000.0f : -1.0f)) : normal(rng);
          }
          QuantizeRow(dtype, src.data(), w.data() + r * rb, cols);
          DequantizeRow(dtype, w.data() + r * rb, &deq[r * cols], cols);
        }
        for (int64_t i = 0; i < cols; ++i) {
          x[i] = extreme ? ((i % 7 == 0) ? -3.0e4f : 3.0e4f) : uni(rng);
        }
        ActQuantBuffer aqb;
        const QuantizedActs qa = aqb.Quantize(x.data(), cols, 1, cols);
        GemvActBuffer gb;
        const GemvActs ga = gb.Prepare(qa, 0);
        std::vector<float> yp(rows + 1, -7.0f), yv(rows + 1, -7.0f), y2(rows + 1, -7.0f);
        const bool portable = kind != kWQ4_1;  // the portable kernel covers Q4_0 and Q8_0
        if (portable) GemvPortable(kind, w.data(), rb, rows, ga, yp.data());
        if (vec != nullptr) vec(w.data(), rb, rows, ga, yv.data());
        if (vec2 != nullptr) vec2(w.data(), rb, rows, ga, y2.data());
        const std::string where = std::string(DTypeName(dtype)) + " " + std::to_string(rows) + "x" +
                                  std::to_string(cols) + (extreme ? " extreme" : "");
        for (int64_t r = 0; r < rows; ++r) {
          double ref = 0, mag = 0;
          for (int64_t i = 0; i < cols; ++i) {
            const double t = static_cast<double>(deq[r * cols + i]) * qa.D(0)[i / 32] * qa.Qs(0)[i];
            ref += t;
            mag += std::fabs(t);
          }
          // Exact integer lane sums, float scaling and summation: a few ulps of the magnitude.
          const double tol = 2e-6 * mag + 1e-30;
          if (portable) {
            ASSERT_LE(std::fabs(yp[r] - ref), tol) << where << " portable row " << r;
          }
          if (vec != nullptr) {
            ASSERT_LE(std::fabs(yv[r] - ref), tol) << where << " avx512 row " << r;
            worst = std::max(worst, std::fabs(yv[r] - ref) / tol);
          }
          if (vec2 != nullptr) {
            ASSERT_LE(std::fabs(y2[r] - ref), tol) << where << " avx2 row " << r;
            worst2 = std::max(worst2, std::fabs(y2[r] - ref) / tol);
          }
        }
        ASSERT_EQ(yp[rows], -7.0f);
        ASSERT_EQ(yv[rows], -7.0f) << where << " wrote past the last row";
        ASSERT_EQ(y2[rows], -7.0f) << where << " avx2 wrote past the last row";
      }
    }
  }
  if (vec2 != nullptr) {
    std::printf("  %s avx2: worst |err| / tol %.3g\n", std::string(DTypeName(dtype)).c_str(),
                worst2);
  }
  if (vec == nullptr && vec2 == nullptr) GTEST_SKIP() << "no vector GEMV here: portable only";
  if (vec == nullptr) return;
  std::printf("  %s: worst |err| / tol %.3g\n", std::string(DTypeName(dtype)).c_str(), worst);
}

TEST(GemvTest, Q4_0) { RunKind(DType::kQ4_0); }
TEST(GemvTest, Q8_0) { RunKind(DType::kQ8_0); }
TEST(GemvTest, Q4_1) { RunKind(DType::kQ4_1); }

}  // namespace
}  // namespace jisu::matmul_internal
