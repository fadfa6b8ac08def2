// Paged attention (ops/attention.h): the AVX-512 and AVX2 kernels and the portable loops against a
// double-precision softmax-weighted sum, over scattered block tables, windows that start and
// end mid-block, every supported head size and one the vector kernel declines.
#include "ops/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace jisu {
namespace {

struct Case {
  int64_t group, head_dim, first, last;
};

void Reference(const float* q, const Case& c, float scale, const PagedKvHead& kv,
               std::vector<double>* out) {
  out->assign(c.group * c.head_dim, 0.0);
  auto row = [&](const float* base, int64_t p) {
    return base + kv.block_table[p / kv.block_size] * kv.block_stride +
           (p % kv.block_size) * c.head_dim;
  };
  for (int64_t g = 0; g < c.group; ++g) {
    std::vector<double> s;
    for (int64_t p = c.first; p <= c.last; ++p) {
      double dot = 0;
      for (int64_t d = 0; d < c.head_dim; ++d)
        dot += double{q[g * c.head_dim + d]} * row(kv.keys, p)[d];
      s.push_back(dot * scale);
    }
    const double mx = *std::max_element(s.begin(), s.end());
    double sum = 0;
    for (double& x : s) sum += (x = std::exp(x - mx));
    for (int64_t p = c.first; p <= c.last; ++p) {
      for (int64_t d = 0; d < c.head_dim; ++d) {
        (*out)[g * c.head_dim + d] += s[p - c.first] / sum * row(kv.values, p)[d];
      }
    }
  }
}

TEST(AttentionTest, KernelsMatchDoubleReference) {
  constexpr int64_t kBlockSize = 16, kBlocks = 12, kKvHeads = 2;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const Case cases[] = {{1, 64, 0, 0},   {3, 64, 0, 4},     {3, 64, 0, 15}, {3, 64, 5, 16},
                        {2, 64, 0, 150}, {4, 128, 3, 99},   {1, 32, 0, 40}, {2, 96, 17, 47},
                        {3, 48, 0, 33},  {8, 128, 100, 180}};
  int vector_runs = 0;
  for (const Case& c : cases) {
    const int64_t block_floats = kKvHeads * kBlockSize * c.head_dim;
    std::vector<float> keys(kBlocks * block_floats), values(kBlocks * block_floats);
    // Large score spread (|q.k| * scale up to ~10) so softmax is far from uniform.
    for (float& x : keys) x = normal(rng) * 1.5f;
    for (float& x : values) x = normal(rng);
    std::vector<int32_t> table(kBlocks);
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), rng);
    std::vector<float> q(c.group * c.head_dim);
    for (float& x : q) x = normal(rng);
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    PagedKvHead kv;
    kv.keys = keys.data() + kBlockSize * c.head_dim;  // KV head 1
    kv.values = values.data() + kBlockSize * c.head_dim;
    kv.block_stride = block_floats;
    kv.block_size = kBlockSize;
    kv.block_table = table.data();
    std::vector<double> ref;
    Reference(q.data(), c, scale, kv, &ref);

    const int64_t stride = c.last - c.first + 3;
    std::vector<float> scores(c.group * stride), portable(c.group * c.head_dim),
        vec(c.group * c.head_dim);
    attention_internal::AttendPagedPortable(q.data(), c.group, c.head_dim, scale, kv, c.first,
                                            c.last, scores.data(), stride, portable.data());
    const bool ran =
        attention_internal::AttendPagedAvx512(q.data(), c.group, c.head_dim, scale, kv, c.first,
                                              c.last, scores.data(), stride, vec.data());
    vector_runs += ran;
    std::vector<float> vec2(c.group * c.head_dim);
    const bool ran2 =
        attention_internal::AttendPagedAvx2(q.data(), c.group, c.head_dim, scale, kv, c.first,
                                            c.last, scores.data(), stride, vec2.data());
    vector_runs += ran2;
    // Outputs are convex combinations of N(0,1) values: float summation and exp rounding stay
    // far below 1e-5.
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_NEAR(portable[i], ref[i], 1e-5) << "portable, head_dim " << c.head_dim << " i " << i;
      if (ran) ASSERT_NEAR(vec[i], ref[i], 1e-5) << "avx512, head_dim " << c.head_dim << " i " << i;
      if (ran2) ASSERT_NEAR(vec2[i], ref[i], 1e-5) << "avx2, head_dim " << c.head_dim << " i " << i;
    }
    if (c.head_dim == 48) EXPECT_FALSE(ran || ran2) << "head_dim 48 has no vector kernel";
  }
  if (vector_runs == 0) GTEST_SKIP() << "no vector kernel available here";
}

}  // namespace
}  // namespace jisu
