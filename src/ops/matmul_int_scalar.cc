// Portable integer kernels: the reference the vector kernels are tested against (same integer
// sums, float scaling in a fixed order), and the fallback where no vector ISA is present.
#include "ops/matmul_int.h"
#include "ops/matmul_int_kquant.h"

namespace jisu::matmul_internal {
namespace {

template <WeightKind K>
void IntDot(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
            int64_t t0, int num_tokens, float* y, int64_t y_stride) {
  constexpr int z = IntZeroPoint(K);
  const int64_t nb = a.cols / 32;
  uint8_t u[32];
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
    float acc[kMaxDotTokens] = {};
    for (int64_t b = 0; b < nb; ++b) {
      float dw, m;
      DecodeIntBlock<K>(row + b * IntBlockBytes(K), u, &dw, &m);
      for (int t = 0; t < num_tokens; ++t) {
        const int8_t* q = a.Qs(t0 + t) + b * 32;
        int32_t isum = 0;
        for (int i = 0; i < 32; ++i) isum += static_cast<int32_t>(u[i]) * q[i];
        const int32_t asum = a.Sum(t0 + t)[b];
        const float da = a.D(t0 + t)[b];
        acc[t] += dw * da * static_cast<float>(isum - z * asum) + m * da * static_cast<float>(asum);
      }
    }
    for (int t = 0; t < num_tokens; ++t) y[t * y_stride + r] = acc[t];
  }
}

constexpr int kMr = 4;

template <WeightKind K>
void IntGemm(int64_t nblocks, const uint8_t* panel, const QuantizedActs& a, int64_t t0,
             int num_tokens, int64_t b0, float* c, int64_t ldc, int valid_rows, bool accumulate) {
  constexpr int z = IntZeroPoint(K);
  float acc[kMr][kIntNr] = {};
  for (int64_t b = 0; b < nblocks; ++b) {
    const uint8_t* pb = panel + b * kIntPanelBlockBytes;
    const float* dw = reinterpret_cast<const float*>(pb + 8 * kIntNr * 4);
    const float* m = dw + kIntNr;
    for (int t = 0; t < num_tokens; ++t) {
      const int8_t* q = a.Qs(t0 + t) + (b0 + b) * 32;
      const int32_t asum = a.Sum(t0 + t)[b0 + b];
      const float da = a.D(t0 + t)[b0 + b];
      for (int j = 0; j < kIntNr; ++j) {
        if constexpr (K == kWQ6_K) {  // signed values, a scale per half block (PackQ6_K)
          int32_t half[2] = {0, 0};
          for (int g = 0; g < 8; ++g) {
            for (int e = 0; e < 4; ++e) {
              half[g / 4] += static_cast<int8_t>(pb[(g * kIntNr + j) * 4 + e]) * q[4 * g + e];
            }
          }
          acc[t][j] += static_cast<float>(half[0]) * (dw[j] * da) +
                       static_cast<float>(half[1]) * (m[j] * da);
          continue;
        }
        int32_t isum = -z * asum;
        for (int g = 0; g < 8; ++g) {
          for (int e = 0; e < 4; ++e) isum += pb[(g * kIntNr + j) * 4 + e] * q[4 * g + e];
        }
        acc[t][j] += static_cast<float>(isum) * (dw[j] * da);
        if constexpr (K == kWQ4_1) acc[t][j] += m[j] * (da * static_cast<float>(asum));
      }
    }
  }
  for (int t = 0; t < num_tokens; ++t) {
    for (int j = 0; j < valid_rows; ++j) {
      c[t * ldc + j] = accumulate ? c[t * ldc + j] + acc[t][j] : acc[t][j];
    }
  }
}

constexpr IntKernelSet kScalarInt = {
    "scalar-int8",
    {nullptr, nullptr, nullptr, IntDot<kWQ8_0>, IntDot<kWQ4_0>, IntDot<kWQ4_1>, IntDotQ4_KScalar,
     IntDotQ5_KScalar, IntDotQ6_KScalar},
    // Q4_K and Q5_K: packed into Q4_1 panels (PackIntPanel), so the Q4_1 micro-kernel (exact
    // int32 sums for Q5_K's 5-bit values too); Q6_K: signed panels, its own kernel.
    {nullptr, nullptr, nullptr, IntGemm<kWQ8_0>, IntGemm<kWQ4_0>, IntGemm<kWQ4_1>, IntGemm<kWQ4_1>,
     IntGemm<kWQ4_1>, IntGemm<kWQ6_K>},
    kMr,
    nullptr,
};

}  // namespace

const IntKernelSet& ScalarIntKernels() { return kScalarInt; }

}  // namespace jisu::matmul_internal
