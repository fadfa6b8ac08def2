// MatMulMany runs several matrices on one set of prepared activations as one parallel section;
// its promise is that every output is bit-identical to a MatMul call of its own, on every path
// (decode dot / GEMV / interleaved kernels, the GEMMs), numerics and thread count; also when an
// ActProducer writes the activations inside the call.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ops/matmul.h"
#include "ops/matmul_int.h"
#include "ops/quant.h"

namespace jisu {
namespace {

constexpr float kSentinel = -12345.0f;

// A random matrix in `dtype` and, when `interleave` and this CPU's MatMul reads one, its
// interleaved copy (as the CPU backend makes it at load).
struct Matrix {
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> copy_store;
  WeightMatrix w;

  Matrix(DType dtype, int64_t rows, int64_t cols, bool interleave, uint32_t seed,
         MatmulPath path = MatmulPath::kAuto) {
    const size_t row_bytes = RowBytes(dtype, static_cast<uint64_t>(cols)).value();
    bytes.resize(row_bytes * rows);
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 0.5f);
    std::vector<float> src(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : src) v = nd(rng);
      QuantizeRow(dtype, src.data(), bytes.data() + r * row_bytes, cols);
    }
    w.dtype = dtype;
    w.data = bytes.data();
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = row_bytes;
    const size_t il_bytes = interleave ? InterleavedBytes(w) : 0;
    if (il_bytes > 0) {
      copy_store.resize(il_bytes + 64);
      auto* aligned = reinterpret_cast<uint8_t*>(
          (reinterpret_cast<uintptr_t>(copy_store.data()) + 63) / 64 * 64);
      ThreadPool load_pool(2);
      InterleaveWeights(w, aligned, load_pool, path);
      w.interleaved = aligned;
      w.interleaved_bf16 = InterleavesToBf16(w, path);
    }
  }
};

struct Out {
  int64_t stride;
  std::vector<float> y;
};

// Runs `ms` on x both ways and compares every byte of every output (the padding of each row
// included: neither may write past w.rows).
void ExpectSameAsSeparate(const std::vector<const Matrix*>& ms, int64_t tokens,
                          const std::string& what, MatmulPath path) {
  const MatMulOptions options{.path = path};
  const int64_t cols = ms[0]->w.cols;
  const int64_t xs = cols + 3;
  std::mt19937 rng(static_cast<uint32_t>(tokens * 7 + cols));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(tokens * xs));
  for (float& v : x) v = nd(rng);
  static ThreadPool pool1(1), pool2(2), pool3(3);
  for (ThreadPool* pool : {&pool1, &pool2, &pool3}) {
    const std::string where = what + " tokens=" + std::to_string(tokens) +
                              " threads=" + std::to_string(pool->num_threads());
    std::vector<Out> want, got;
    std::vector<MatMulTarget> targets;
    for (const Matrix* m : ms) {
      const int64_t ys = m->w.rows + 5;
      want.push_back({ys, std::vector<float>(static_cast<size_t>(tokens * ys), kSentinel)});
      got.push_back({ys, std::vector<float>(static_cast<size_t>(tokens * ys), kSentinel)});
    }
    for (size_t j = 0; j < ms.size(); ++j) {
      MatMul(ms[j]->w, x.data(), xs, tokens, want[j].y.data(), want[j].stride, *pool, nullptr,
             options);
      targets.push_back({&ms[j]->w, got[j].y.data(), got[j].stride});
    }
    MatMulMany(targets, x.data(), xs, tokens, *pool, nullptr, options);
    // The same with the activations produced inside the call into a buffer that starts as NaN
    // (row padding too, which nothing may read): a product that read a row before it was
    // produced, or a row produced twice or never, shows.
    std::vector<float> xp(x.size(), std::numeric_limits<float>::quiet_NaN());
    std::vector<std::atomic<int>> produced(static_cast<size_t>(tokens));
    const auto copy_rows = [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        std::memcpy(&xp[t * xs], &x[t * xs], sizeof(float) * cols);
        produced[t].fetch_add(1);
      }
    };
    const ActProducer produce(copy_rows);
    std::vector<Out> got_p = want;
    std::vector<MatMulTarget> targets_p;
    for (size_t j = 0; j < ms.size(); ++j) {
      std::fill(got_p[j].y.begin(), got_p[j].y.end(), kSentinel);
      targets_p.push_back({&ms[j]->w, got_p[j].y.data(), got_p[j].stride});
    }
    MatMulMany(targets_p, xp.data(), xs, tokens, *pool, &produce, options);
    for (int64_t t = 0; t < tokens; ++t) {
      ASSERT_EQ(produced[t].load(), 1) << where << ": token " << t << " produced";
    }
    for (const std::vector<Out>* outs : {&got, &got_p}) {
      const char* how = outs == &got ? "" : " (produced in the call)";
      for (size_t j = 0; j < ms.size(); ++j) {
        for (int64_t t = 0; t < tokens; ++t) {
          for (int64_t o = 0; o < want[j].stride; ++o) {
            const size_t i = static_cast<size_t>(t * want[j].stride + o);
            ASSERT_EQ(0, std::memcmp(&(*outs)[j].y[i], &want[j].y[i], sizeof(float)))
                << where << how << ": matrix " << j << " token " << t << " row " << o << " got "
                << (*outs)[j].y[i] << " want " << want[j].y[i];
          }
        }
      }
    }
  }
}

// Token counts on both sides of every dot/GEMM switch (1 = GEMV; 8 integer GEMM; 20 float
// GEMM; 64 interleaved integer GEMM) and past a 96-token block.
const int64_t kTokenCounts[] = {1, 3, 8, 19, 20, 33, 64, 101};

class MatMulManyTest : public ::testing::TestWithParam<MatmulPath> {};

// A layer's q/k/v-like triple (rows not multiples of a 16-row group or a 128-row chunk) and a
// gate/up-like pair, in every type with a kernel of its own, with and without the interleaved
// copy.
TEST_P(MatMulManyTest, EveryOutputEqualsItsOwnMatMul) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1,
                   DType::kQ4_K, DType::kQ6_K}) {
    for (bool interleave : {false, true}) {
      const int64_t cols = 512;
      const MatmulPath p = GetParam();
      const Matrix q(dt, 136, cols, interleave, 1, p), k(dt, 40, cols, interleave, 2, p),
          v(dt, 24, cols, interleave, 3, p);
      const Matrix gate(dt, 264, cols, interleave, 4, p), up(dt, 264, cols, interleave, 5, p);
      // Where this CPU reads no interleaved copy of the type (K-quants; every type on Arm),
      // the pass with `interleave` would repeat the one without: 3-4 minutes under qemu.
      if (interleave && !q.w.interleaved && !k.w.interleaved && !v.w.interleaved &&
          !gate.w.interleaved && !up.w.interleaved) {
        continue;
      }
      const std::string what = std::string(DTypeName(dt)) + (interleave ? " interleaved" : "");
      for (int64_t tokens : kTokenCounts) {
        ExpectSameAsSeparate({&q, &k, &v}, tokens, what + " qkv", p);
        ExpectSameAsSeparate({&gate, &up}, tokens, what + " gate/up", p);
        if (HasFailure()) return;
      }
    }
  }
}

// Matrices that cannot share activations (a Q4_K_M layer mixes Q4_K and Q6_K; one copy made,
// one not; more than four) run one after another, with the same results.
TEST_P(MatMulManyTest, MixedTargetsFallBackToSeparateCalls) {
  const int64_t cols = 256;
  const MatmulPath p = GetParam();
  const Matrix a(DType::kQ4_K, 48, cols, true, 6, p), b(DType::kQ6_K, 16, cols, true, 7, p),
      c(DType::kQ4_K, 16, cols, false, 8, p);
  const Matrix f16(DType::kF16, 48, cols, true, 9, p),
      f16_rows(DType::kF16, 32, cols, false, 10, p);
  for (int64_t tokens : {int64_t{1}, int64_t{5}, int64_t{40}}) {
    ExpectSameAsSeparate({&a, &b, &c}, tokens, "q4_k/q6_k/q4_k", p);
    ExpectSameAsSeparate({&f16, &f16_rows}, tokens, "f16 copy/rows", p);
    ExpectSameAsSeparate({&f16, &f16, &f16_rows, &f16, &f16}, tokens, "five", p);
  }
}

TEST_P(MatMulManyTest, EmptyAndZeroRowTargets) {
  const Matrix a(DType::kQ8_0, 32, 64, true, 11);
  Matrix none(DType::kQ8_0, 16, 64, true, 12);
  none.w.rows = 0;
  ThreadPool pool(2);
  std::vector<float> x(64, 1.0f), y(32, kSentinel), y0(4, kSentinel);
  MatMulMany({}, x.data(), 64, 1, pool);
  const MatMulTarget targets[] = {{&none.w, y0.data(), 4}, {&a.w, y.data(), 32}};
  MatMulMany(targets, x.data(), 64, 1, pool);
  for (float v : y0) EXPECT_EQ(v, kSentinel);
  std::vector<float> want(32, kSentinel);
  MatMul(a.w, x.data(), 64, 1, want.data(), 32, pool);
  EXPECT_EQ(0, std::memcmp(y.data(), want.data(), sizeof(float) * 32));
  MatMulMany(targets, x.data(), 64, 0, pool);  // no tokens: nothing written
  EXPECT_EQ(0, std::memcmp(y.data(), want.data(), sizeof(float) * 32));
  // A producer still runs where no matrix reads the activations.
  std::atomic<int> rows_produced{0};
  const auto count = [&](int64_t b, int64_t e) { rows_produced += static_cast<int>(e - b); };
  const ActProducer produce(count);
  MatMulMany({}, x.data(), 64, 3, pool, &produce);
  EXPECT_EQ(rows_produced, 3);
  const MatMulTarget zero_rows[] = {{&none.w, y0.data(), 4}};
  MatMulMany(zero_rows, x.data(), 64, 2, pool, &produce);
  EXPECT_EQ(rows_produced, 5);
}

INSTANTIATE_TEST_SUITE_P(Numerics, MatMulManyTest,
                         ::testing::Values(MatmulPath::kAuto, MatmulPath::kFloat,
                                           MatmulPath::kInt8),
                         [](const ::testing::TestParamInfo<MatmulPath>& info) {
                           return std::string(MatmulPathName(info.param));
                         });

}  // namespace
}  // namespace jisu
