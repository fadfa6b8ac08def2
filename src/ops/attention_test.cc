// Paged attention (ops/attention.h): the AVX-512 and AVX2 kernels and the portable loops against a
// double-precision softmax-weighted sum, over scattered block tables, windows that start and
// end mid-block, every supported head size and one the vector kernel declines; with F32 and
// F16 caches (F16 both against the reference over the same halves, which checks how the
// kernels read them, and against the unrounded floats, within a bound derived from F16
// rounding).
#include "ops/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "core/half.h"

namespace jisu {
namespace {

struct Case {
  int64_t group, head_dim, first, last;
  int64_t block_size = 16;  // slots per cache block
};

// kv must be an F32 view.
void Reference(const float* q, const Case& c, float scale, const PagedKvHead& kv,
               std::vector<double>* out) {
  out->assign(c.group * c.head_dim, 0.0);
  auto row = [&](const void* base, int64_t p) {
    return static_cast<const float*>(base) + kv.block_table[p / kv.block_size] * kv.block_stride +
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

// Blocks of 32 and 48 slots: the kernels walk a block in pieces of at most 16 rows, some
// pieces then end mid-block.
const Case kCases[] = {{1, 64, 0, 0},       {3, 64, 0, 4},        {3, 64, 0, 15},
                       {3, 64, 5, 16},      {2, 64, 0, 150},      {4, 128, 3, 99},
                       {1, 32, 0, 40},      {2, 96, 17, 47},      {3, 48, 0, 33},
                       {8, 128, 100, 180},  {5, 64, 1, 61},       {3, 32, 7, 7},
                       {3, 64, 3, 200, 32}, {7, 96, 20, 130, 48}, {2, 128, 0, 31, 32}};
constexpr int64_t kKvHeads = 2;
// Cache blocks of a case: at least 12 (the block table is shuffled over all of them).
int64_t Blocks(const Case& c) { return std::max<int64_t>(12, c.last / c.block_size + 1); }

// One case's cache contents (float, and the same rounded to half), query and block table.
struct Data {
  std::vector<float> keys, values;         // float32 cache
  std::vector<uint16_t> keys16, values16;  // F32ToF16 of the above
  std::vector<float> keys16f, values16f;   // the halves widened back
  std::vector<int32_t> table;
  std::vector<float> q;
  float scale = 0;
  int64_t block_elements = 0;
};

Data MakeData(const Case& c, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Data d;
  d.block_elements = kKvHeads * c.block_size * c.head_dim;
  d.keys.resize(Blocks(c) * d.block_elements);
  d.values.resize(Blocks(c) * d.block_elements);
  // Large score spread (|q.k| * scale up to ~10) so softmax is far from uniform.
  for (float& x : d.keys) x = normal(rng) * 1.5f;
  for (float& x : d.values) x = normal(rng);
  for (const auto& [from, to16, tof] : {std::tuple{&d.keys, &d.keys16, &d.keys16f},
                                        std::tuple{&d.values, &d.values16, &d.values16f}}) {
    to16->resize(from->size());
    tof->resize(from->size());
    for (size_t i = 0; i < from->size(); ++i) {
      (*to16)[i] = F32ToF16((*from)[i]);
      (*tof)[i] = F16ToF32((*to16)[i]);
    }
  }
  d.table.resize(Blocks(c));
  std::iota(d.table.begin(), d.table.end(), 0);
  std::shuffle(d.table.begin(), d.table.end(), rng);
  d.q.resize(c.group * c.head_dim);
  for (float& x : d.q) x = normal(rng);
  d.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return d;
}

// The view of KV head 1 of `keys`/`values` (either float or uint16_t vectors).
template <typename T>
PagedKvHead View(const Data& d, const Case& c, const std::vector<T>& keys,
                 const std::vector<T>& values) {
  PagedKvHead kv;
  kv.type = sizeof(T) == 2 ? KvType::kF16 : KvType::kF32;
  kv.keys = keys.data() + c.block_size * c.head_dim;
  kv.values = values.data() + c.block_size * c.head_dim;
  kv.block_stride = d.block_elements;
  kv.block_size = c.block_size;
  kv.block_table = d.table.data();
  return kv;
}

// Every kernel this machine runs, on one view: (name, output).
std::vector<std::pair<const char*, std::vector<float>>> RunKernels(const Data& d, const Case& c,
                                                                   const PagedKvHead& kv) {
  const int64_t stride = c.last - c.first + 3;
  std::vector<float> scores(c.group * stride);
  std::vector<std::pair<const char*, std::vector<float>>> runs;
  std::vector<float> out(c.group * c.head_dim);
  attention_internal::AttendPagedPortable(d.q.data(), c.group, c.head_dim, d.scale, kv, c.first,
                                          c.last, scores.data(), stride, out.data());
  runs.emplace_back("portable", out);
  if (attention_internal::AttendPagedAvx512(d.q.data(), c.group, c.head_dim, d.scale, kv, c.first,
                                            c.last, scores.data(), stride, out.data())) {
    runs.emplace_back("avx512", out);
  }
  if (attention_internal::AttendPagedAvx2(d.q.data(), c.group, c.head_dim, d.scale, kv, c.first,
                                          c.last, scores.data(), stride, out.data())) {
    runs.emplace_back("avx2", out);
  }
  return runs;
}

// Outputs are convex combinations of N(0,1) values: float summation and exp rounding stay far
// below 1e-5.
constexpr double kFloatTolerance = 1e-5;

// Every kernel over `kernel_view` against the double reference over `ref_view`, within
// kFloatTolerance; returns the kernel runs (the scalar one included).
std::vector<std::pair<const char*, std::vector<float>>> ExpectKernelsMatch(
    const Data& d, const Case& c, const PagedKvHead& ref_view, const PagedKvHead& kernel_view) {
  std::vector<double> ref;
  Reference(d.q.data(), c, d.scale, ref_view, &ref);
  auto runs = RunKernels(d, c, kernel_view);
  for (const auto& [name, out] : runs) {
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_NEAR(out[i], ref[i], kFloatTolerance)
          << name << ", head_dim " << c.head_dim << " i " << i;
      if (std::fabs(out[i] - ref[i]) > kFloatTolerance) return runs;
    }
  }
  return runs;
}

TEST(AttentionTest, KernelsMatchDoubleReference) {
  std::mt19937 rng(5);
  size_t vector_runs = 0;
  for (const Case& c : kCases) {
    const Data d = MakeData(c, rng);
    const auto runs =
        ExpectKernelsMatch(d, c, View(d, c, d.keys, d.values), View(d, c, d.keys, d.values));
    vector_runs += runs.size() - 1;
    if (c.head_dim == 48) {
      EXPECT_EQ(runs.size(), 1u) << "head_dim 48 has no vector kernel";
    }
  }
  if (vector_runs == 0) GTEST_SKIP() << "no vector kernel available here";
}

// F16 cache: the kernels must compute exactly what float attention over the widened halves
// computes (a wrong row, block or head offset, or a misread half, breaks this).
TEST(AttentionTest, F16KernelsMatchReferenceOverTheSameHalves) {
  std::mt19937 rng(6);
  size_t vector_runs = 0;
  for (const Case& c : kCases) {
    const Data d = MakeData(c, rng);
    vector_runs += ExpectKernelsMatch(d, c, View(d, c, d.keys16f, d.values16f),
                                      View(d, c, d.keys16, d.values16))
                       .size() -
                   1;
  }
  if (vector_runs == 0) GTEST_SKIP() << "no vector kernel available here";
}

// F16 cache against attention over the unrounded floats. Each stored element is x(1 + e) with
// |e| <= u = 2^-11 (values here stay far above the half subnormals). A score then moves by at
// most D = u * scale * max_p sum_d |q_d k_pd|, each softmax weight by a factor within
// [e^-2D, e^2D], so an output moves by at most (e^2D - 1) * max|v| from the weights plus
// u * max|v| from the values themselves (plus float rounding).
TEST(AttentionTest, F16KernelsStayWithinTheHalfRoundingBound) {
  std::mt19937 rng(7);
  const double u = std::ldexp(1.0, -11);
  for (const Case& c : kCases) {
    const Data d = MakeData(c, rng);
    const PagedKvHead fkv = View(d, c, d.keys, d.values);
    std::vector<double> ref;
    Reference(d.q.data(), c, d.scale, fkv, &ref);
    double dmax = 0, vmax = 0;
    for (int64_t p = c.first; p <= c.last; ++p) {
      const int64_t at = d.table[p / c.block_size] * d.block_elements +
                         (p % c.block_size) * c.head_dim + c.block_size * c.head_dim;
      for (int64_t g = 0; g < c.group; ++g) {
        double s = 0;
        for (int64_t i = 0; i < c.head_dim; ++i)
          s += std::fabs(d.q[g * c.head_dim + i] * d.keys[at + i]);
        dmax = std::max(dmax, u * d.scale * s);
      }
      for (int64_t i = 0; i < c.head_dim; ++i)
        vmax = std::max<double>(vmax, std::fabs(d.values[at + i]));
    }
    const double bound = (std::exp(2 * dmax) - 1) * vmax * (1 + u) + u * vmax + kFloatTolerance;
    double worst = 0;
    for (const auto& [name, out] : RunKernels(d, c, View(d, c, d.keys16, d.values16))) {
      for (size_t i = 0; i < ref.size(); ++i) {
        const double err = std::fabs(out[i] - ref[i]);
        worst = std::max(worst, err);
        ASSERT_LE(err, bound) << name << ", head_dim " << c.head_dim << " i " << i;
      }
    }
    // The halves are really what was read: rounding shows.
    EXPECT_GT(worst, 1e-6) << "head_dim " << c.head_dim;
  }
}

}  // namespace
}  // namespace jisu
