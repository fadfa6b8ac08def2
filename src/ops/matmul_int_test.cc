// The integer (activation-quantized) matmul path: every ISA's kernels through MatMul (dot and
// GEMM paths, 1/2/3 threads) against a double-precision reference on the same quantized
// activations, and the whole path against the float product within the activation-rounding
// bound.
#include "ops/matmul_int.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ops/act_quant.h"
#include "ops/matmul.h"
#include "ops/matmul_interleaved.h"
#include "ops/matmul_kernels.h"
#include "ops/quant.h"
#include "ops/quant_k.h"

namespace jisu {
namespace {

using matmul_internal::ForceIsa;
using matmul_internal::ForcePath;
using matmul_internal::Isa;
using matmul_internal::IsaAvailable;
using matmul_internal::IsaName;
using matmul_internal::Path;

// The integer path for every call, decode included.
constexpr MatMulOptions kInt8{.path = MatmulPath::kInt8};

class MatMulIntTest : public ::testing::Test {
 protected:
  void TearDown() override {
    ForceIsa(std::nullopt);
    ForcePath(std::nullopt);
  }
};

struct Case {
  DType dtype;
  int64_t rows, cols;
  std::vector<uint8_t> bytes;
  std::vector<float> deq;
  WeightMatrix View() const {
    return WeightMatrix{dtype, bytes.data(), rows, cols,
                        RowBytes(dtype, static_cast<uint64_t>(cols)).value()};
  }
};

enum class Fill { kNormal, kZeroBlocks, kExtreme };

Case MakeWeights(DType dtype, int64_t rows, int64_t cols, Fill fill, std::mt19937& rng) {
  Case c{dtype, rows, cols, {}, {}};
  const size_t rb = RowBytes(dtype, static_cast<uint64_t>(cols)).value();
  c.bytes.resize(rb * rows);
  c.deq.resize(static_cast<size_t>(rows * cols));
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> src(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < cols; ++i) {
      float v = normal(rng);
      if (fill == Fill::kZeroBlocks && (i / 32 + r) % 3 == 0) v = 0.0f;
      // Blocks whose largest element is negative: Q8_0 then stores -127/+127 extremes and
      // Q4_0 the nibble 0 (= -8), the largest magnitudes the formats hold.
      if (fill == Fill::kExtreme) v = (i % 32 == 0) ? -60000.0f : ((i & 1) ? 30000.0f : -1.0f);
      src[i] = v;
    }
    QuantizeRow(dtype, src.data(), c.bytes.data() + r * rb, cols);
    DequantizeRow(dtype, c.bytes.data() + r * rb, &c.deq[r * cols], cols);
  }
  return c;
}

std::vector<float> MakeActs(int64_t tokens, int64_t stride, int64_t cols, Fill fill,
                            std::mt19937& rng) {
  std::uniform_real_distribution<float> uni(-2.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(tokens * stride), 0.0f);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < cols; ++i) {
      float v = uni(rng);
      if (fill == Fill::kZeroBlocks && (i / 32 + t) % 2 == 0) v = 0.0f;
      if (fill == Fill::kExtreme) v = (i % 7 == 0) ? -3.0e4f : 3.0e4f;
      x[t * stride + i] = v;
    }
  }
  return x;
}

// Checks every available ISA, path and thread count on one case.
void Check(const Case& w, int64_t tokens, Fill fill, double* worst_int, double* worst_float) {
  std::mt19937 rng(static_cast<uint32_t>(w.rows * 31 + tokens));
  const int64_t xs = w.cols + 5, ys = w.rows + 3;
  const std::vector<float> x = MakeActs(tokens, xs, w.cols, fill, rng);
  ActQuantBuffer aqb;
  const QuantizedActs qa = aqb.Quantize(x.data(), xs, tokens, w.cols);

  // ref_q: double product of dequantized weights and dequantized activations (what the integer
  // kernels compute up to float rounding); ref_f: the float product; bound: activation rounding.
  const int64_t nb = w.cols / 32;
  std::vector<double> ref_q(tokens * w.rows), scale(tokens * w.rows), ref_f(tokens * w.rows),
      bound(tokens * w.rows);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t o = 0; o < w.rows; ++o) {
      double sq = 0, sa = 0, sf = 0, bd = 0;
      for (int64_t i = 0; i < w.cols; ++i) {
        const double wv = w.deq[o * w.cols + i];
        const double xq = static_cast<double>(qa.D(t)[i / 32]) * qa.Qs(t)[i];
        sq += wv * xq;
        sa += std::fabs(wv * xq);
        sf += wv * x[t * xs + i];
        bd += std::fabs(wv) * (0.5 * qa.D(t)[i / 32] * (1 + 1e-6));
      }
      (void)nb;
      ref_q[t * w.rows + o] = sq;
      scale[t * w.rows + o] = sa;
      ref_f[t * w.rows + o] = sf;
      bound[t * w.rows + o] = bd;
    }
  }
  static ThreadPool pool1(1), pool2(2), pool3(3);
  // The same matrix with its GEMM panels packed once (WeightMatrix::int_panels): the GEMM must
  // give bit-identical results reading them in place.
  std::vector<uint8_t> panel_store(IntPanelBytes(w.View()) + 64);
  WeightMatrix prepacked = w.View();
  if (IntPanelBytes(w.View()) > 0) {
    auto* aligned = reinterpret_cast<uint8_t*>(
        (reinterpret_cast<uintptr_t>(panel_store.data()) + 63) / 64 * 64);
    PackIntPanels(w.View(), aligned, pool2);
    prepacked.int_panels = aligned;
  }
  // The 16-row interleaved copy (matmul_interleaved.h), built by the portable repack on every
  // machine: its portable dot against the reference, its GEMM panels byte-identical to those
  // packed from the GGUF rows; where the CPU reads it (AVX-512 VNNI, AVX2), MatMul on it below.
  const std::optional<matmul_internal::WeightKind> kind = matmul_internal::WeightKindOf(w.dtype);
  std::vector<uint8_t> il;
  if (matmul_internal::IsIlIntKind(*kind)) {
    il.resize(matmul_internal::InterleavedBytes(*kind, w.rows, w.cols) + 64);
    uint8_t* il_aligned =
        reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(il.data()) + 63) / 64 * 64);
    const int64_t groups = (w.rows + 15) / 16;
    matmul_internal::InterleaveGroups(*kind, w.bytes.data(), w.View().row_bytes, w.rows, w.cols, 0,
                                      groups, il_aligned);
    std::vector<float> y(static_cast<size_t>(tokens * ys), -12345.0f);
    for (int64_t t = 0; t < tokens; t += matmul_internal::kMaxDotTokens) {
      const int nt =
          static_cast<int>(std::min<int64_t>(matmul_internal::kMaxDotTokens, tokens - t));
      matmul_internal::IlDotPortable(*kind, il_aligned, w.rows, 0, groups, qa, t, nt,
                                     y.data() + t * ys, ys);
    }
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t o = 0; o < w.rows; ++o) {
        const size_t k = t * w.rows + o;
        ASSERT_LE(std::fabs(y[t * ys + o] - ref_q[k]), 2e-6 * scale[k] + 1e-30)
            << DTypeName(w.dtype) << " " << w.rows << "x" << w.cols << " interleaved portable dot"
            << " token " << t << " row " << o;
      }
      for (int64_t o = w.rows; o < ys; ++o) ASSERT_EQ(y[t * ys + o], -12345.0f);
    }
    const int64_t nb = w.cols / 32;
    std::vector<uint8_t> want(static_cast<size_t>(nb * matmul_internal::kIntPanelBlockBytes));
    std::vector<uint8_t> got(want.size());
    for (int64_t r0 = 0; r0 < w.rows; r0 += matmul_internal::kIntNr) {
      const int valid = static_cast<int>(std::min<int64_t>(matmul_internal::kIntNr, w.rows - r0));
      for (int64_t b0 : {int64_t{0}, nb / 2}) {
        const int64_t n = nb - b0;
        std::fill(want.begin(), want.end(), 0x5a);
        std::fill(got.begin(), got.end(), 0xa5);
        matmul_internal::PackIntPanelPortable(*kind, w.bytes.data() + r0 * w.View().row_bytes,
                                              w.View().row_bytes, valid, b0, n, want.data());
        matmul_internal::PackIntPanelFromIl(*kind, il_aligned, nb, r0, valid, b0, n, got.data());
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(),
                                 static_cast<size_t>(n * matmul_internal::kIntPanelBlockBytes)))
            << DTypeName(w.dtype) << " " << w.rows << "x" << w.cols << " panel of rows " << r0
            << " from block " << b0;
      }
    }
  }
  WeightMatrix interleaved = w.View();
  if (InterleavedBytes(w.View()) > 0) {
    interleaved.interleaved =
        reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(il.data()) + 63) / 64 * 64);
  }
  for (Isa isa : matmul_internal::kAllIsas) {
    if (!IsaAvailable(isa)) continue;
    ForceIsa(isa);
    for (ThreadPool* pool : {&pool1, &pool2, &pool3}) {
      for (Path path : {Path::kDot, Path::kGemm}) {
        ForcePath(path);
        const std::string where = std::string(DTypeName(w.dtype)) + " " + std::to_string(w.rows) +
                                  "x" + std::to_string(w.cols) +
                                  " tokens=" + std::to_string(tokens) + " isa=" + IsaName(isa) +
                                  " (" + matmul_internal::IntKernelsFor(isa).name +
                                  ") threads=" + std::to_string(pool->num_threads()) +
                                  (path == Path::kDot ? " dot" : " gemm");
        std::vector<float> y(static_cast<size_t>(tokens * ys), -12345.0f);
        MatMul(w.View(), x.data(), xs, tokens, y.data(), ys, *pool, nullptr, kInt8);
        for (int64_t t = 0; t < tokens; ++t) {
          for (int64_t o = 0; o < w.rows; ++o) {
            const double got = y[t * ys + o];
            const size_t k = t * w.rows + o;
            // Float scaling of exact integer block sums: a few ulps of the magnitude sum.
            const double tol = 2e-6 * scale[k] + 1e-30;
            const double err = std::fabs(got - ref_q[k]);
            ASSERT_LE(err, tol) << where << " token " << t << " row " << o << " got " << got
                                << " want " << ref_q[k];
            *worst_int = std::max(*worst_int, err / tol);
            // Against the float product: the activation rounding bound (+ the same slack).
            const double ferr = std::fabs(got - ref_f[k]);
            ASSERT_LE(ferr, bound[k] + tol) << where << " vs float, token " << t << " row " << o;
            if (bound[k] > 0) *worst_float = std::max(*worst_float, ferr / bound[k]);
          }
          for (int64_t o = w.rows; o < ys; ++o) {
            ASSERT_EQ(y[t * ys + o], -12345.0f) << where << " wrote past row end";
          }
        }
        if (interleaved.interleaved != nullptr) {
          // Another summation order (16 rows per vector, per block), so the reference check;
          // tokens of one call must not depend on how many share it (bit-identical to one at
          // a time).
          std::vector<float> yi(static_cast<size_t>(tokens * ys), -12345.0f);
          MatMul(interleaved, x.data(), xs, tokens, yi.data(), ys, *pool, nullptr, kInt8);
          for (int64_t t = 0; t < tokens; ++t) {
            for (int64_t o = 0; o < w.rows; ++o) {
              const size_t k = t * w.rows + o;
              ASSERT_LE(std::fabs(yi[t * ys + o] - ref_q[k]), 2e-6 * scale[k] + 1e-30)
                  << where << " interleaved, token " << t << " row " << o;
            }
            for (int64_t o = w.rows; o < ys; ++o) {
              ASSERT_EQ(yi[t * ys + o], -12345.0f) << where << " interleaved wrote past row end";
            }
          }
          if (path == Path::kDot && tokens > 1 &&
              matmul_internal::IlDotFor(isa, *kind) != nullptr) {
            std::vector<float> y1(static_cast<size_t>(ys), -12345.0f);
            for (int64_t t = 0; t < tokens; ++t) {
              MatMul(interleaved, x.data() + t * xs, xs, 1, y1.data(), ys, *pool, nullptr, kInt8);
              for (int64_t o = 0; o < w.rows; ++o) {
                ASSERT_EQ(y1[o], yi[t * ys + o]) << where << " interleaved one token " << t;
              }
            }
          }
        }
        if (prepacked.int_panels != nullptr && path == Path::kGemm) {
          std::vector<float> yp(static_cast<size_t>(tokens * ys), -12345.0f);
          MatMul(prepacked, x.data(), xs, tokens, yp.data(), ys, *pool, nullptr, kInt8);
          for (size_t i = 0; i < y.size(); ++i) {
            ASSERT_EQ(yp[i], y[i]) << where << " prepacked panels, element " << i;
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

void RunType(DType dtype) {
  std::mt19937 rng(77 + static_cast<uint32_t>(dtype));
  double worst_int = 0, worst_float = 0;
  // Rows not multiples of the 32-row panel or 128-row task, odd block counts, more blocks than
  // one packed slice (32), tokens not multiples of the 4-token tile. K-quants: 256-element
  // super-blocks, rows odd and not multiples of the 2-row group or 4-row task granule.
  const bool kquant = Traits(dtype).block_size == 256;
  const std::vector<Shape> shapes =
      kquant ? std::vector<Shape>{{1, 256}, {7, 512}, {45, 2048}, {131, 768}, {33, 1280}}
             : std::vector<Shape>{{1, 32}, {7, 96}, {45, 1056}, {131, 288}, {257, 160}};
  for (const Shape s : shapes) {
    for (Fill fill : {Fill::kNormal, Fill::kZeroBlocks}) {
      const Case w = MakeWeights(dtype, s.rows, s.cols, fill, rng);
      for (int64_t tokens : {1, 2, 3, 5, 13, 30}) {
        Check(w, tokens, fill, &worst_int, &worst_float);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  const Case w = MakeWeights(dtype, 37, kquant ? 512 : 160, Fill::kExtreme, rng);
  for (int64_t tokens : {1, 9}) {
    Check(w, tokens, Fill::kExtreme, &worst_int, &worst_float);
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::printf(
      "  %s: worst |err| / tol vs quantized-activation reference %.3g; worst |err| vs "
      "float / activation-rounding bound %.3g\n",
      std::string(DTypeName(dtype)).c_str(), worst_int, worst_float);
}

TEST_F(MatMulIntTest, Q8_0) { RunType(DType::kQ8_0); }
TEST_F(MatMulIntTest, Q4_0) { RunType(DType::kQ4_0); }
TEST_F(MatMulIntTest, Q4_1) { RunType(DType::kQ4_1); }
TEST_F(MatMulIntTest, Q4_K) { RunType(DType::kQ4_K); }
TEST_F(MatMulIntTest, Q5_K) { RunType(DType::kQ5_K); }
TEST_F(MatMulIntTest, Q6_K) { RunType(DType::kQ6_K); }

// Each vector K-quant dot kernel against the scalar reference directly, on the same quantized
// activations: 1..kMaxDotTokens tokens from a token offset, odd row counts, a padded row
// stride and y stride (nothing written past the rows).
TEST(IntKQuantDotTest, VectorMatchesScalar) {
  using matmul_internal::kMaxDotTokens;
  const matmul_internal::IntKernelSet* vec = matmul_internal::Avx2IntKernels();
  if (vec == nullptr || !IsaAvailable(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 here";
  const matmul_internal::IntKernelSet& ref = matmul_internal::ScalarIntKernels();
  std::mt19937 rng(21);
  for (DType dtype : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    const auto kind = *matmul_internal::WeightKindOf(dtype);
    ASSERT_NE(ref.dot[kind], nullptr);
    ASSERT_NE(vec->dot[kind], nullptr);
    for (const Shape s : {Shape{1, 256}, Shape{3, 768}, Shape{5, 256}, Shape{9, 1536}}) {
      for (Fill fill : {Fill::kNormal, Fill::kZeroBlocks, Fill::kExtreme}) {
        const Case w = MakeWeights(dtype, s.rows, s.cols, fill, rng);
        const size_t row_bytes = w.View().row_bytes + 32;  // padded stride
        std::vector<uint8_t> padded(row_bytes * s.rows, 0xa5);
        for (int64_t r = 0; r < s.rows; ++r) {
          std::memcpy(&padded[r * row_bytes], &w.bytes[r * w.View().row_bytes], w.View().row_bytes);
        }
        constexpr int64_t kT0 = 1;
        const std::vector<float> x = MakeActs(kT0 + kMaxDotTokens, s.cols, s.cols, fill, rng);
        ActQuantBuffer aqb;
        const QuantizedActs qa = aqb.Quantize(x.data(), s.cols, kT0 + kMaxDotTokens, s.cols);
        for (int nt = 1; nt <= kMaxDotTokens; ++nt) {
          const int64_t ys = s.rows + 2;
          std::vector<float> yr(nt * ys, -7.0f), yv(nt * ys, -7.0f);
          ref.dot[kind](padded.data(), row_bytes, s.rows, qa, kT0, nt, yr.data(), ys);
          vec->dot[kind](padded.data(), row_bytes, s.rows, qa, kT0, nt, yv.data(), ys);
          for (int t = 0; t < nt; ++t) {
            for (int64_t o = 0; o < s.rows; ++o) {
              double mag = 0;  // sum |w * x_q| for the tolerance
              for (int64_t i = 0; i < s.cols; ++i) {
                mag += std::fabs(static_cast<double>(w.deq[o * s.cols + i]) *
                                 qa.D(kT0 + t)[i / 32] * qa.Qs(kT0 + t)[i]);
              }
              ASSERT_NEAR(yv[t * ys + o], yr[t * ys + o], 2e-6 * mag + 1e-30)
                  << DTypeName(dtype) << " " << s.rows << "x" << s.cols << " tokens " << nt
                  << " token " << t << " row " << o;
            }
            for (int64_t o = s.rows; o < ys; ++o) ASSERT_EQ(yv[t * ys + o], -7.0f);
          }
        }
      }
    }
  }
}

// A vector panel packer must write exactly the portable packer's bytes, for every integer
// weight type, full and partial panels (missing rows are zero), at a block offset, over enough
// blocks to cross the AVX2 packer's 8-block copies of partial panels and its prefetch cadence.
using PackerFn = bool (*)(matmul_internal::WeightKind, const uint8_t*, size_t, int, int64_t,
                          int64_t, uint8_t*);

// with_kquants: the packer also takes full Q4_K and Q5_K panels (into Q4_1 panels; partial ones
// are left to the portable loops: the packer returns false).
void ExpectPackerMatchesPortable(PackerFn packer, const char* what, bool with_kquants) {
  using matmul_internal::kIntNr;
  using matmul_internal::kIntPanelBlockBytes;
  std::mt19937 rng(3);
  std::vector<DType> dtypes = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1};
  if (with_kquants) {
    dtypes.push_back(DType::kQ4_K);
    dtypes.push_back(DType::kQ5_K);
    dtypes.push_back(DType::kQ6_K);
  }
  for (DType dtype : dtypes) {
    const auto kind = *matmul_internal::WeightKindOf(dtype);
    constexpr int64_t kCols = 256 * 3, kBlocks = 19, kB0 = 1;  // blocks of 32
    const size_t row_bytes = *RowBytes(dtype, kCols) + 6;      // a padded stride
    std::vector<uint8_t> w(row_bytes * kIntNr);
    for (auto& x : w) x = static_cast<uint8_t>(rng());
    for (int64_t r = 0; r < kIntNr; ++r) {  // sane f16 scales (random bytes may be NaN)
      for (int64_t b = 0; b < kCols / Traits(dtype).block_size; ++b) {
        uint8_t* blk = w.data() + r * row_bytes + b * Traits(dtype).block_bytes;
        if (dtype == DType::kQ6_K) {
          blk[offsetof(BlockQ6_K, d) + 1] = 0x2c;  // Q6_K's scale comes last
          continue;
        }
        blk[1] = 0x2c;
        if (dtype == DType::kQ4_1 || dtype == DType::kQ4_K || dtype == DType::kQ5_K) {
          blk[3] = 0xac;
        }
      }
    }
    for (int valid : {32, 31, 17, 16, 5, 1}) {
      for (int64_t nblocks : {kBlocks, int64_t{3}}) {
        std::vector<uint8_t> ref(nblocks * kIntPanelBlockBytes, 0xee), vec(ref.size(), 0xdd);
        matmul_internal::PackIntPanelPortable(kind, w.data(), row_bytes, valid, kB0, nblocks,
                                              ref.data());
        alignas(64) static uint8_t buf[kBlocks * kIntPanelBlockBytes];
        if (!packer(kind, w.data(), row_bytes, valid, kB0, nblocks, buf)) {
          if (Traits(dtype).block_size == 256 && valid < kIntNr) continue;
          GTEST_SKIP() << "no " << what << " here";
        }
        std::memcpy(vec.data(), buf, vec.size());
        EXPECT_EQ(ref, vec) << DTypeName(dtype) << " valid rows " << valid << " blocks " << nblocks;
      }
    }
  }
}

TEST(PackIntPanelTest, Avx512MatchesPortableExactly) {
  ExpectPackerMatchesPortable(matmul_internal::PackIntPanelAvx512, "AVX-512 VNNI", false);
}

TEST(PackIntPanelTest, Avx2MatchesPortableExactly) {
  ExpectPackerMatchesPortable(matmul_internal::PackIntPanelAvx2, "AVX2", true);
}

TEST(ActQuantTest, BlockScaleAndRounding) {
  std::vector<float> x(64, 0.0f);
  x[0] = 127.0f;
  x[1] = -63.5f;  // half: rounds away from zero
  x[2] = 0.49f;
  // second block stays all zero: d = 0, q = 0
  ActQuantBuffer b;
  const QuantizedActs a = b.Quantize(x.data(), 64, 1, 64);
  EXPECT_EQ(a.D(0)[0], 1.0f);
  EXPECT_EQ(a.Qs(0)[0], 127);
  EXPECT_EQ(a.Qs(0)[1], -64);
  EXPECT_EQ(a.Qs(0)[2], 0);
  EXPECT_EQ(a.Sum(0)[0], 63);
  EXPECT_EQ(a.D(0)[1], 0.0f);
  EXPECT_EQ(a.Sum(0)[1], 0);
  EXPECT_EQ(a.Sl(0)[0], 63.0f);
  EXPECT_EQ(a.Dl(0)[9], 0.0f);
}

// The AVX-512 and AVX2 quantizers must give exactly the scalar definition's bytes: random blocks of
// many scales, exact halves after scaling, an all-zero block, a single huge value, a row stride
// wider than the row.
TEST(ActQuantTest, VectorMatchesScalarExactly) {
  constexpr int64_t kCols = 160, kStride = 173, kTokens = 7;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<float> x(kTokens * kStride);
  for (int64_t t = 0; t < kTokens; ++t) {
    for (int64_t i = 0; i < kCols; ++i) {
      x[t * kStride + i] = uni(rng) * std::ldexp(1.0f, static_cast<int>(t) * 3 - 9);
    }
  }
  for (int i = 0; i < 32; ++i) x[kStride + 32 + i] = 0.0f;            // token 1, block 1: zero
  for (int i = 0; i < 32; ++i) x[2 * kStride + i] = (i - 16) * 0.5f;  // halves at scale 127/8
  x[2 * kStride + 5] = 127.0f;                                        // scale 1: exact halves
  x[2 * kStride + 6] = -2.5f;
  x[2 * kStride + 7] = 2.5f;
  x[3 * kStride + 64] = 3e30f;
  const int64_t nb = kCols / 32;
  struct Out {
    std::vector<int8_t> qs = std::vector<int8_t>(kTokens * kCols);
    std::vector<float> d = std::vector<float>(kTokens * nb);
    std::vector<int32_t> sum = std::vector<int32_t>(kTokens * nb);
    std::vector<float> dl = std::vector<float>(kTokens * kCols / 4);
    std::vector<float> sl = std::vector<float>(kTokens * kCols / 4);
    act_quant_internal::ActQuantRows rows() {
      return {kCols, qs.data(), d.data(), sum.data(), dl.data(), sl.data()};
    }
  } ref, vec;
  act_quant_internal::QuantizeRowsScalar(x.data(), kStride, 0, kTokens, ref.rows());
  Out vec2;
  const bool avx2 = act_quant_internal::QuantizeRowsAvx2(x.data(), kStride, 0, 2, vec2.rows());
  if (avx2) {
    ASSERT_TRUE(act_quant_internal::QuantizeRowsAvx2(x.data(), kStride, 2, kTokens, vec2.rows()));
    EXPECT_EQ(ref.qs, vec2.qs);
    EXPECT_EQ(ref.d, vec2.d);
    EXPECT_EQ(ref.sum, vec2.sum);
    EXPECT_EQ(ref.dl, vec2.dl);
    EXPECT_EQ(ref.sl, vec2.sl);
  }
  Out neon;
  const bool has_neon = act_quant_internal::QuantizeRowsNeon(x.data(), kStride, 0, 4, neon.rows());
  if (has_neon) {
    ASSERT_TRUE(act_quant_internal::QuantizeRowsNeon(x.data(), kStride, 4, kTokens, neon.rows()));
    EXPECT_EQ(ref.qs, neon.qs);
    EXPECT_EQ(ref.d, neon.d);
    EXPECT_EQ(ref.sum, neon.sum);
    EXPECT_EQ(ref.dl, neon.dl);
    EXPECT_EQ(ref.sl, neon.sl);
  }
  EXPECT_EQ(ref.qs[2 * kCols + 6], -3);  // -2.5 rounds away from zero
  EXPECT_EQ(ref.qs[2 * kCols + 7], 3);
  if (!act_quant_internal::QuantizeRowsAvx512(x.data(), kStride, 0, 3, vec.rows())) {
    if (!avx2 && !has_neon) GTEST_SKIP() << "no vector quantizer here";
    return;
  }
  ASSERT_TRUE(act_quant_internal::QuantizeRowsAvx512(x.data(), kStride, 3, kTokens, vec.rows()));
  EXPECT_EQ(ref.qs, vec.qs);
  EXPECT_EQ(ref.d, vec.d);
  EXPECT_EQ(ref.sum, vec.sum);
  EXPECT_EQ(ref.dl, vec.dl);
  EXPECT_EQ(ref.sl, vec.sl);
}

}  // namespace
}  // namespace jisu
