#include "ops/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "tests/test_paths.h"

namespace jisu {
namespace {

using nlohmann::json;

json LoadFixture() {
  std::ifstream in(jisu::testing::TestDataPath("ops/elementwise.json"));
  EXPECT_TRUE(in.good()) << "missing tests/data/ops/elementwise.json";
  if (!in) return json::object();
  return json::parse(in);
}

std::vector<float> Floats(const json& j) {
  std::vector<float> v;
  v.reserve(j.size());
  for (const auto& e : j) {
    if (e.is_string()) {
      v.push_back(e.get<std::string>() == "-inf" ? -INFINITY : INFINITY);
    } else {
      v.push_back(e.get<float>());
    }
  }
  return v;
}

// Elementwise comparison: |got - want| <= rel * |want| + abs, reporting the worst relative
// error so the margin is visible in the log.
void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, double rel,
                 double abs, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " [" << i << "]";
      continue;
    }
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    ASSERT_LE(err, rel * std::fabs(want[i]) + abs)
        << what << " [" << i << "]: got " << got[i] << " want " << want[i];
    if (want[i] != 0) worst = std::max(worst, err / std::fabs(want[i]));
  }
  std::printf("  %s: worst relative error %.3g\n", what.c_str(), worst);
}

// ---- Against PyTorch / Hugging Face (fixture from tools/make_quant_fixtures.py) ---------

TEST(ElementwiseTorchTest, RmsNormMatchesLlamaRMSNorm) {
  const json fx = LoadFixture();
  ASSERT_TRUE(fx.contains("rmsnorm"));
  for (const auto& c : fx["rmsnorm"]) {
    std::vector<float> x = Floats(c["x"]);
    const std::vector<float> w = Floats(c["weight"]);
    std::vector<float> out(x.size());
    const int64_t n = static_cast<int64_t>(x.size());
    RmsNorm(x.data(), w.data(), c["eps"].get<float>(), n, out.data());
    ExpectClose(out, Floats(c["out"]), 1e-6, 1e-30, "rmsnorm n=" + std::to_string(n));
    RmsNorm(x.data(), w.data(), c["eps"].get<float>(), n, x.data());  // in place
    EXPECT_EQ(x, out);
  }
}

TEST(ElementwiseTorchTest, SiluMulMatchesTorch) {
  const json fx = LoadFixture();
  ASSERT_TRUE(fx.contains("silu_mul"));
  for (const auto& c : fx["silu_mul"]) {
    std::vector<float> gate = Floats(c["gate"]);
    const std::vector<float> up = Floats(c["up"]);
    SiluMul(gate.data(), up.data(), static_cast<int64_t>(gate.size()));
    ExpectClose(gate, Floats(c["out"]), 1e-6, 1e-30, "silu_mul n=" + std::to_string(up.size()));
  }
}

TEST(ElementwiseTorchTest, SoftmaxMatchesTorch) {
  const json fx = LoadFixture();
  ASSERT_TRUE(fx.contains("softmax"));
  for (const auto& c : fx["softmax"]) {
    std::vector<float> x = Floats(c["x"]);
    Softmax(x.data(), static_cast<int64_t>(x.size()));
    ExpectClose(x, Floats(c["out"]), 1e-6, 1e-30, "softmax n=" + std::to_string(x.size()));
  }
}

TEST(ElementwiseTorchTest, RopeMatchesHuggingFace) {
  const json fx = LoadFixture();
  ASSERT_TRUE(fx.contains("rope"));
  for (const auto& c : fx["rope"]) {
    const int64_t head_dim = c["head_dim"];
    const int64_t heads = c["heads"];
    const int64_t pos = c["position"];
    const std::vector<float> inv_freq = Floats(c["inv_freq"]);
    ASSERT_EQ(static_cast<int64_t>(inv_freq.size()), head_dim / 2);
    const std::string what = "rope d=" + std::to_string(head_dim) + " pos=" + std::to_string(pos);
    std::vector<float> x = Floats(c["x"]);
    ApplyRope(x.data(), heads, head_dim, pos, inv_freq.data(), RopeStyle::kHalfSplit);
    // Values near zero come from cancellation; compare those absolutely at the inputs' scale.
    ExpectClose(x, Floats(c["half_split"]), 1e-6, 1e-6, what + " half-split");
    x = Floats(c["x"]);
    ApplyRope(x.data(), heads, head_dim, pos, inv_freq.data(), RopeStyle::kInterleaved);
    ExpectClose(x, Floats(c["interleaved"]), 1e-6, 1e-6, what + " interleaved");
    // The forward pass's way: angles once per position, then every layer's rotations.
    std::vector<float> cos(head_dim / 2), sin(head_dim / 2);
    RopeAngles(pos, inv_freq.data(), head_dim / 2, cos.data(), sin.data());
    for (RopeStyle style : {RopeStyle::kHalfSplit, RopeStyle::kInterleaved}) {
      std::vector<float> y = Floats(c["x"]);
      ApplyRopeAngles(y.data(), heads, head_dim, cos.data(), sin.data(), style);
      const bool half = style == RopeStyle::kHalfSplit;
      ExpectClose(y, Floats(c[half ? "half_split" : "interleaved"]), 1e-6, 1e-6,
                  what + (half ? " half-split, angles" : " interleaved, angles"));
    }
  }
}

// ---- Against straightforward double references --------------------------------------------

std::vector<float> RandomVector(int64_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& e : v) e = normal(rng);
  return v;
}

TEST(ElementwiseTest, RmsNormVsDouble) {
  for (int64_t n : {1, 7, 64, 4096, 5000}) {
    const std::vector<float> x = RandomVector(n, 2.0f, 1);
    const std::vector<float> w = RandomVector(n, 1.0f, 2);
    std::vector<float> out(x.size());
    RmsNorm(x.data(), w.data(), 1e-6f, n, out.data());
    double ss = 0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double r = 1.0 / std::sqrt(ss / n + 1e-6);
    std::vector<float> want(x.size());
    for (int64_t i = 0; i < n; ++i) want[i] = static_cast<float>(x[i] * r * w[i]);
    ExpectClose(out, want, 1e-6, 1e-30, "rmsnorm-double n=" + std::to_string(n));
  }
}

TEST(ElementwiseTest, SiluMulVsDouble) {
  std::vector<float> gate = RandomVector(999, 5.0f, 3);
  const std::vector<float> up = RandomVector(999, 1.0f, 4);
  std::vector<float> want(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) {
    const double g = gate[i];
    want[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
  SiluMul(gate.data(), up.data(), static_cast<int64_t>(gate.size()));
  ExpectClose(gate, want, 1e-6, 1e-30, "silu_mul-double");
}

// Every implementation (vector exp on AVX-512 and AVX2, libm in the portable loop) within 1e-6
// relative of double, over a range wider than activations reach.
TEST(ElementwiseTest, SiluMulBothPathsVsDouble) {
  std::vector<float> gate = RandomVector(1001, 20.0f, 7);
  const std::vector<float> up = RandomVector(1001, 1.0f, 8);
  std::vector<float> want(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) {
    const double g = gate[i];
    want[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
  std::vector<float> portable = gate;
  elementwise_internal::SiluMulPortable(portable.data(), up.data(), 1001);
  ExpectClose(portable, want, 1e-6, 1e-30, "silu_mul portable");
  std::vector<float> gate2 = gate;
  const bool avx2 = elementwise_internal::SiluMulAvx2(gate2.data(), up.data(), 1001);
  if (avx2) ExpectClose(gate2, want, 1e-6, 1e-30, "silu_mul avx2");
  if (!elementwise_internal::SiluMulAvx512(gate.data(), up.data(), 1001)) {
    if (!avx2) GTEST_SKIP() << "no vector SiLU here";
    return;
  }
  ExpectClose(gate, want, 1e-6, 1e-30, "silu_mul avx512");
}

TEST(ElementwiseTest, SoftmaxVsDoubleAndEdgeCases) {
  std::vector<float> x = RandomVector(333, 10.0f, 5);
  double max = -INFINITY, sum = 0;
  for (float v : x) max = std::max<double>(max, v);
  for (float v : x) sum += std::exp(v - max);
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = static_cast<float>(std::exp(x[i] - max) / sum);
  std::vector<float> in = x;
  Softmax(x.data(), static_cast<int64_t>(x.size()));
  // x - max is rounded in float (as in PyTorch), which costs exp() a relative error of about
  // eps * |x - max|; beyond that the result is within 1e-6.
  for (size_t i = 0; i < x.size(); ++i) {
    const double rel = 1e-6 + 1.2e-7 * std::fabs(in[i] - max);
    EXPECT_NEAR(x[i], want[i], rel * want[i]) << i;
  }

  float big[3] = {1000.0f, 1000.0f, -INFINITY};  // stable: no overflow from exp(1000)
  Softmax(big, 3);
  EXPECT_EQ(big[0], 0.5f);
  EXPECT_EQ(big[1], 0.5f);
  EXPECT_EQ(big[2], 0.0f);
  float one = -7.0f;
  Softmax(&one, 1);
  EXPECT_EQ(one, 1.0f);
}

TEST(ElementwiseTest, AddInPlace) {
  std::vector<float> a = {1, 2, 3, 4, 5};
  const std::vector<float> b = {0.5f, -2, 0, 1e30f, -5};
  AddInPlace(a.data(), b.data(), 5);
  EXPECT_EQ(a, (std::vector<float>{1.5f, 0, 3, 1e30f, 0}));
}

// Worked by hand: head_dim 4, position 2, inv_freq {1, 0.01} -> angles 2 and 0.02.
//   cos 2 = -0.41614684, sin 2 = 0.90929743, cos .02 = 0.99980001, sin .02 = 0.01999867
TEST(ElementwiseTest, RopeSmallExampleByHand) {
  const float inv_freq[2] = {1.0f, 0.01f};
  float x[4] = {1, 2, 3, 4};
  // Half-split pairs (0, 2) at angle 2 and (1, 3) at angle 0.02.
  ApplyRope(x, 1, 4, 2, inv_freq, RopeStyle::kHalfSplit);
  EXPECT_NEAR(x[0], 1 * -0.41614684 - 3 * 0.90929743, 1e-6);  // -3.14403913
  EXPECT_NEAR(x[2], 3 * -0.41614684 + 1 * 0.90929743, 1e-6);  // -0.33914309
  EXPECT_NEAR(x[1], 2 * 0.99980001 - 4 * 0.01999867, 1e-6);   //  1.91960534
  EXPECT_NEAR(x[3], 4 * 0.99980001 + 2 * 0.01999867, 1e-6);   //  4.03919738
  float y[8] = {1, 2, 3, 4, 1, 2, 3, 4};  // two heads: both rotated the same way
  // Interleaved pairs (0, 1) at angle 2 and (2, 3) at angle 0.02.
  ApplyRope(y, 2, 4, 2, inv_freq, RopeStyle::kInterleaved);
  for (int h = 0; h < 2; ++h) {
    EXPECT_NEAR(y[4 * h + 0], 1 * -0.41614684 - 2 * 0.90929743, 1e-6);  // -2.23474170
    EXPECT_NEAR(y[4 * h + 1], 2 * -0.41614684 + 1 * 0.90929743, 1e-6);  //  0.07700375
    EXPECT_NEAR(y[4 * h + 2], 3 * 0.99980001 - 4 * 0.01999867, 1e-6);   //  2.91940535
    EXPECT_NEAR(y[4 * h + 3], 4 * 0.99980001 + 3 * 0.01999867, 1e-6);   //  4.05919604
  }
  // Position 0 is the identity.
  float z[4] = {1, 2, 3, 4};
  ApplyRope(z, 1, 4, 0, inv_freq, RopeStyle::kHalfSplit);
  EXPECT_EQ(z[0], 1);
  EXPECT_EQ(z[1], 2);
  EXPECT_EQ(z[2], 3);
  EXPECT_EQ(z[3], 4);
}

TEST(ElementwiseTest, RopeLongHeadUsesEverySlice) {
  // head_dim beyond ApplyRope's 512-pair stack buffers (its heap path).
  const int64_t head_dim = 1030, half = head_dim / 2;
  std::vector<float> inv_freq(half);
  for (int64_t i = 0; i < half; ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / head_dim);
  std::vector<float> x = RandomVector(2 * head_dim, 1.0f, 7);
  std::vector<float> want(x.size());
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      const double a = 123.0f * inv_freq[i];
      const double x0 = x[h * head_dim + i], x1 = x[h * head_dim + i + half];
      want[h * head_dim + i] = static_cast<float>(x0 * std::cos(a) - x1 * std::sin(a));
      want[h * head_dim + i + half] = static_cast<float>(x1 * std::cos(a) + x0 * std::sin(a));
    }
  }
  ApplyRope(x.data(), 2, head_dim, 123, inv_freq.data(), RopeStyle::kHalfSplit);
  ExpectClose(x, want, 1e-6, 1e-6, "rope d=1030");
}

}  // namespace
}  // namespace jisu
