// Probe (a benchmark, not part of the build): does a 16-row interleaved F16 layout fix the
// one-row F16 decode dot's slowdown on long rows (bench/results/2026-12-02-cpu-interleave.md:
// 2048 x 5632 at 10-15 GB/s against ~20-25 for 5632 x 2048 on Zen 4)? One thread, the same
// random matrices through jisu's MatMul (F16 rows) and through a 16-row interleaved kernel:
// per group of 16 rows and column k, the 16 rows' halves are 32 contiguous bytes, so each
// activation is broadcast once per 16 rows instead of re-read for every row.
//
// Not in the CMake build; build it by hand after building build/:
//   g++ -O2 -std=c++20 -Isrc -Iinclude bench/probes/f16_interleave_probe.cc
//     build/libjisu_lib.a -lpthread -o /tmp/f16_probe
// Run: /tmp/f16_probe ROWS COLS
#include <cstdio>

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "ops/matmul.h"

using namespace jisu;

namespace {

#define PROBE_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c,fma")))

// rows x cols halves (row-major) -> [group][col][16].
void Interleave(const uint16_t* w, int64_t rows, int64_t cols, uint16_t* out) {
  for (int64_t g = 0; g < rows / 16; ++g) {
    for (int64_t k = 0; k < cols; ++k) {
      for (int r = 0; r < 16; ++r) out[(g * cols + k) * 16 + r] = w[(g * 16 + r) * cols + k];
    }
  }
}

PROBE_TARGET void GemvIl(const uint16_t* il, int64_t groups, int64_t cols, const float* x,
                         float* y) {
  for (int64_t g = 0; g < groups; ++g) {
    const uint16_t* base = il + g * cols * 16;
    __m512 acc[8] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t k = 0; k < cols; k += 8) {
      for (int u = 0; u < 8; ++u) {
        const __m512 w = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + (k + u) * 16)));
        acc[u] = _mm512_fmadd_ps(w, _mm512_set1_ps(x[k + u]), acc[u]);
      }
    }
    _mm512_storeu_ps(
        y + g * 16,
        _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])),
                      _mm512_add_ps(_mm512_add_ps(acc[4], acc[5]), _mm512_add_ps(acc[6], acc[7]))));
  }
}

// rows x cols halves -> [group][32-column block][16 rows][32 halves]: each group one sequential
// stream of 64-byte row pieces; a block's 32 activations stay in two registers for 16 rows.
void Tile(const uint16_t* w, int64_t rows, int64_t cols, uint16_t* out) {
  for (int64_t g = 0; g < rows / 16; ++g) {
    for (int64_t b = 0; b < cols / 32; ++b) {
      for (int r = 0; r < 16; ++r) {
        for (int i = 0; i < 32; ++i) {
          out[((g * (cols / 32) + b) * 16 + r) * 32 + i] = w[(g * 16 + r) * cols + b * 32 + i];
        }
      }
    }
  }
}

PROBE_TARGET void GemvTile(const uint16_t* il, int64_t groups, int64_t cols, const float* x,
                           float* y) {
  const int64_t blocks = cols / 32;
  for (int64_t g = 0; g < groups; ++g) {
    const uint16_t* base = il + g * cols * 16;
    __m512 acc[16];
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      const __m512 x0 = _mm512_loadu_ps(x + 32 * b);
      const __m512 x1 = _mm512_loadu_ps(x + 32 * b + 16);
      const uint16_t* o = base + b * 512;
#pragma GCC unroll 16
      for (int r = 0; r < 16; ++r) {
        const __m512 w0 =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(o + 32 * r)));
        const __m512 w1 =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(o + 32 * r + 16)));
        acc[r] = _mm512_fmadd_ps(w0, x0, acc[r]);
        acc[r] = _mm512_fmadd_ps(w1, x1, acc[r]);
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) y[g * 16 + r] = _mm512_reduce_add_ps(acc[r]);
  }
}

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 2048;
  const int64_t cols = argc > 2 ? std::atoll(argv[2]) : 5632;
  const int64_t mats = std::max<int64_t>(2, (512ll << 20) / (rows * cols * 2));
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0, 1);
  std::vector<std::vector<uint16_t>> w(mats), il(mats), tl(mats);
  std::vector<float> x(cols);
  for (float& v : x) v = nd(rng);
  for (int64_t m = 0; m < mats; ++m) {
    w[m].resize(rows * cols);
    for (auto& h : w[m]) h = F32ToF16(0.02f * nd(rng));
    il[m].resize(rows * cols);
    Interleave(w[m].data(), rows, cols, il[m].data());
    tl[m].resize(rows * cols);
    Tile(w[m].data(), rows, cols, tl[m].data());
  }
  ThreadPool pool(1);
  std::vector<float> y0(rows), y1(rows), y2(rows);
  double max_err = 0;
  for (int64_t m = 0; m < mats; ++m) {
    MatMul(WeightMatrix{DType::kF16, w[m].data(), rows, cols, static_cast<size_t>(cols) * 2},
           x.data(), cols, 1, y0.data(), rows, pool);
    GemvIl(il[m].data(), rows / 16, cols, x.data(), y1.data());
    GemvTile(tl[m].data(), rows / 16, cols, x.data(), y2.data());
    for (int64_t r = 0; r < rows; ++r) {
      max_err = std::max<double>(max_err, std::fabs(y0[r] - y1[r]));
      max_err = std::max<double>(max_err, std::fabs(y0[r] - y2[r]));
    }
  }
  std::printf("%lld x %lld, %lld matrices: max |rows - interleaved| %.3g\n",
              static_cast<long long>(rows), static_cast<long long>(cols),
              static_cast<long long>(mats), max_err);
  const double bytes = static_cast<double>(rows) * cols * 2 * mats;
  for (int round = 0; round < 3; ++round) {
    double t0 = Seconds();
    for (int it = 0; it < 5; ++it) {
      for (int64_t m = 0; m < mats; ++m) {
        MatMul(WeightMatrix{DType::kF16, w[m].data(), rows, cols, static_cast<size_t>(cols) * 2},
               x.data(), cols, 1, y0.data(), rows, pool);
      }
    }
    const double rows_gbs = bytes * 5 / (Seconds() - t0) / 1e9;
    t0 = Seconds();
    for (int it = 0; it < 5; ++it) {
      for (int64_t m = 0; m < mats; ++m) GemvIl(il[m].data(), rows / 16, cols, x.data(), y1.data());
    }
    const double il_gbs = bytes * 5 / (Seconds() - t0) / 1e9;
    t0 = Seconds();
    for (int it = 0; it < 5; ++it) {
      for (int64_t m = 0; m < mats; ++m) {
        GemvTile(tl[m].data(), rows / 16, cols, x.data(), y2.data());
      }
    }
    const double tl_gbs = bytes * 5 / (Seconds() - t0) / 1e9;
    std::printf("round %d: rows %.1f GB/s, interleaved %.1f GB/s, tiled %.1f GB/s\n", round,
                rows_gbs, il_gbs, tl_gbs);
  }
  return 0;
}

#else

int main() {
  std::puts("x86-64 only");
  return 1;
}

#endif
