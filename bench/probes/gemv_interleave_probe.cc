// Probe (a benchmark, not part of the build): how fast can a batch-1 Q4_0 GEMV stream weights
// on this CPU if the weights are repacked at load time into 16-row interleaved blocks, against
// jisu's GEMV on the GGUF layout (matmul_gemv.h)? Both on the same random matrices, a working
// set larger than the L3, outputs compared.
//
// Interleaved layout, per group of 16 rows and per 32-element block b (288 bytes, the same as
// 16 GGUF blocks): the 16 rows' f16 scales (32 bytes), then 4 x 64 bytes where 64-byte chunk j
// holds, for row r, bytes 4j .. 4j + 3 of that row's 16 quant bytes (lane r of a zmm). Low
// nibbles of chunk j are elements 4j .. 4j + 3, high nibbles 16 + 4j .. 16 + 4j + 3, so one
// vpdpbusd with the 4 activation bytes broadcast serves 16 rows x 4 elements.
//
// Not in the CMake build (bench/probes/ holds one-off explorations); build it by hand after
// building build/:
//   g++ -O2 -std=c++20 -Isrc -Iinclude bench/probes/gemv_interleave_probe.cc
//     build/libjisu_lib.a -lpthread -o /tmp/gemv_probe
// Run: /tmp/gemv_probe [threads] [prefetch bytes ahead, 0 = none]
#include <cstdio>

#if defined(__x86_64__)
// GCC 12's AVX-512 headers trip its own -Wmaybe-uninitialized (see matmul_kernels_avx512.cc).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/half.h"
#include "ops/act_quant.h"
#include "ops/matmul_gemv.h"
#include "ops/quant.h"

using namespace jisu;
using namespace jisu::matmul_internal;

namespace {

constexpr int kRows = 5632, kCols = 2048, kBlocks = kCols / 32, kMats = 12;
int g_prefetch = 2048;  // bytes ahead of the current block (0: none), argv[2]

#define PROBE_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,f16c,fma")))

// Repacks kRows GGUF Q4_0 rows (kRows a multiple of 16) into the interleaved layout.
void Interleave(const uint8_t* w, uint8_t* out) {
  const size_t row_bytes = kBlocks * sizeof(BlockQ4_0);
  for (int g = 0; g < kRows / 16; ++g) {
    for (int b = 0; b < kBlocks; ++b) {
      uint8_t* o = out + (static_cast<size_t>(g) * kBlocks + b) * 288;
      for (int r = 0; r < 16; ++r) {
        const auto* blk =
            reinterpret_cast<const BlockQ4_0*>(w + static_cast<size_t>(g * 16 + r) * row_bytes) + b;
        std::memcpy(o + 2 * r, &blk->d, 2);
        for (int j = 0; j < 4; ++j) std::memcpy(o + 32 + 64 * j + 4 * r, blk->qs + 4 * j, 4);
      }
    }
  }
}

// y[g * 16 + r] for groups [g0, g1). a: the token's int8 values, off[b] = -8 * sum of block b,
// d[b] its scale.
PROBE_TARGET void GemvInterleaved(const uint8_t* w, int g0, int g1, const int8_t* a,
                                  const int32_t* off, const float* d, float* y) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  for (int g = g0; g < g1; ++g) {
    const uint8_t* base = w + static_cast<size_t>(g) * kBlocks * 288;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int b = 0; b < kBlocks; b += 2) {
      __m512i s[2];
      __m512 sc[2];
      for (int h = 0; h < 2; ++h) {
        const uint8_t* o = base + static_cast<size_t>(b + h) * 288;
        if (g_prefetch > 0) {
          for (int l = 0; l < 288; l += 64) {
            _mm_prefetch(reinterpret_cast<const char*>(o + g_prefetch + l), _MM_HINT_T0);
          }
        }
        const int32_t* a4 = reinterpret_cast<const int32_t*>(a + (b + h) * 32);
        __m512i i0 = _mm512_set1_epi32(off[b + h]), i1 = _mm512_setzero_si512();
        for (int j = 0; j < 4; ++j) {
          const __m512i q = _mm512_loadu_si512(o + 32 + 64 * j);
          i0 = _mm512_dpbusd_epi32(i0, _mm512_and_si512(q, low4), _mm512_set1_epi32(a4[j]));
          i1 = _mm512_dpbusd_epi32(i1, _mm512_and_si512(_mm512_srli_epi16(q, 4), low4),
                                   _mm512_set1_epi32(a4[4 + j]));
        }
        s[h] = _mm512_add_epi32(i0, i1);
        sc[h] =
            _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(o))),
                          _mm512_set1_ps(d[b + h]));
      }
      acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[0]), sc[0], acc0);
      acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[1]), sc[1], acc1);
    }
    _mm512_storeu_ps(y + g * 16, _mm512_add_ps(acc0, acc1));
  }
}

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  if (argc > 2) g_prefetch = std::atoi(argv[2]);
  const size_t row_bytes = kBlocks * sizeof(BlockQ4_0);
  const size_t mat_bytes = row_bytes * kRows;
  std::mt19937 rng(1);
  std::vector<std::vector<uint8_t>> gguf(kMats), il(kMats);
  std::vector<float> xf(kCols);
  for (float& v : xf) v = std::normal_distribution<float>(0, 1)(rng);
  for (int m = 0; m < kMats; ++m) {
    std::vector<float> wf(static_cast<size_t>(kRows) * kCols);
    for (float& v : wf) v = std::normal_distribution<float>(0, 0.02f)(rng);
    gguf[m].resize(mat_bytes);
    for (int r = 0; r < kRows; ++r) {
      QuantizeRow(DType::kQ4_0, wf.data() + static_cast<size_t>(r) * kCols,
                  gguf[m].data() + r * row_bytes, kCols);
    }
    il[m].resize(mat_bytes);
    Interleave(gguf[m].data(), il[m].data());
  }
  ActQuantBuffer aqb;
  const QuantizedActs qa = aqb.Quantize(xf.data(), kCols, 1, kCols);
  GemvActBuffer gab;
  const GemvActs ga = gab.Prepare(qa, 0);
  std::vector<int32_t> off(kBlocks);
  for (int b = 0; b < kBlocks; ++b) off[b] = -8 * qa.Sum(0)[b];
  const GemvFn gemv = Avx512VnniGemv(kWQ4_0);
  if (gemv == nullptr) {
    std::puts("no AVX-512 VNNI GEMV on this CPU");
    return 1;
  }
  std::vector<float> y0(kRows), y1(kRows);
  double max_err = 0, max_ref = 0;
  for (int m = 0; m < kMats; ++m) {
    gemv(gguf[m].data(), row_bytes, kRows, ga, y0.data());
    GemvInterleaved(il[m].data(), 0, kRows / 16, qa.Qs(0), off.data(), qa.D(0), y1.data());
    for (int r = 0; r < kRows; ++r) {
      max_err = std::max(max_err, static_cast<double>(std::fabs(y0[r] - y1[r])));
      max_ref = std::max(max_ref, static_cast<double>(std::fabs(y0[r])));
    }
  }
  std::printf("max |gguf - interleaved| %.3g (max |y| %.3g)\n", max_err, max_ref);

  auto run = [&](bool interleaved) {
    const int reps = 20;
    std::vector<double> gbs;
    for (int rep = 0; rep < 5; ++rep) {
      const double t0 = Seconds();
      for (int it = 0; it < reps; ++it) {
        for (int m = 0; m < kMats; ++m) {
          std::vector<std::thread> pool;
          auto work = [&](int t) {
            const int g0 = kRows / 16 * t / threads, g1 = kRows / 16 * (t + 1) / threads;
            if (interleaved) {
              GemvInterleaved(il[m].data(), g0, g1, qa.Qs(0), off.data(), qa.D(0), y1.data());
            } else {
              gemv(gguf[m].data() + g0 * 16 * row_bytes, row_bytes, (g1 - g0) * 16, ga,
                   y0.data() + g0 * 16);
            }
          };
          for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
          work(0);
          for (auto& th : pool) th.join();
        }
      }
      gbs.push_back(static_cast<double>(mat_bytes) * kMats * reps / (Seconds() - t0) / 1e9);
    }
    std::sort(gbs.begin(), gbs.end());
    return gbs[gbs.size() / 2];
  };
  for (int round = 0; round < 3; ++round) {
    std::printf("threads %d prefetch %d round %d: gguf layout %.1f GB/s, interleaved %.1f GB/s\n",
                threads, g_prefetch, round, run(false), run(true));
  }
  return 0;
}

#else  // not x86-64

int main() {
  std::puts("x86-64 only");
  return 1;
}

#endif
