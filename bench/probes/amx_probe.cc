// Probe: what the AMX-INT8 path's pieces cost on this CPU (not part of the build).
//   g++ -O2 -std=c++20 bench/probes/amx_probe.cc -o /tmp/amx_probe && /tmp/amx_probe
// Times, per 16 x 16 x 32 unit (one TDPBSUD with K = 32): the multiply alone, with the C tile
// stored, with the stored C read back by 16 vector loads and scaled, and LDTILECFG + TILERELEASE.
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

#define T \
  __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma")))

struct alignas(64) Cfg {
  uint8_t palette = 1, start = 0, r[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

alignas(64) static int8_t A[16 * 64];
alignas(64) static uint8_t B[8 * 64];
alignas(64) static int32_t C[4][16][16];
static volatile float sink;

T static void Config() {
  Cfg c;
  for (int i = 0; i < 4; ++i) c.rows[i] = 16, c.colsb[i] = 64;
  for (int i = 4; i < 6; ++i) c.rows[i] = 16, c.colsb[i] = 32;
  for (int i = 6; i < 8; ++i) c.rows[i] = 8, c.colsb[i] = 64;
  _tile_loadconfig(&c);
}

template <class F>
double Ns(const char* what, long n, F f) {
  f(n / 10);
  const auto t0 = std::chrono::steady_clock::now();
  f(n);
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
  std::printf("%-58s %8.2f ns\n", what, ns);
  return ns;
}

// One unit: A and B tiles loaded, C zeroed, one TDPBSUD (tile numbers must be literals).
#define UNIT(c, a, b, a_offset)       \
  _tile_loadd(a, A + (a_offset), 64); \
  _tile_loadd(b, B, 64);              \
  _tile_zero(c);                      \
  _tile_dpbsud(c, a, b)

// Four units into C0..C3, alternating the A and B tiles.
T static inline __attribute__((always_inline)) void FourUnits() {
  UNIT(0, 4, 6, 0);
  UNIT(1, 5, 7, 32);
  UNIT(2, 4, 6, 0);
  UNIT(3, 5, 7, 32);
}

T static inline __attribute__((always_inline)) void StoreFour() {
  _tile_stored(0, C[0], 64);
  _tile_stored(1, C[1], 64);
  _tile_stored(2, C[2], 64);
  _tile_stored(3, C[3], 64);
}

T static void TdpOnly(long n) {
  _tile_loadd(4, A, 64);
  _tile_loadd(6, B, 64);
  for (long i = 0; i < n; i += 4) {
    _tile_dpbsud(0, 4, 6);
    _tile_dpbsud(1, 4, 6);
    _tile_dpbsud(2, 4, 6);
    _tile_dpbsud(3, 4, 6);
  }
  _tile_stored(0, C[0], 64);
}

T static void LoadsTdp(long n) {
  for (long i = 0; i < n; i += 4) {
    FourUnits();
  }
  _tile_stored(0, C[0], 64);
}

T static void LoadsTdpStore(long n) {
  for (long i = 0; i < n; i += 4) {
    FourUnits();
    StoreFour();
  }
}

T static void Full(long n) {
  __m512 acc[16];
  for (int t = 0; t < 16; ++t) acc[t] = _mm512_setzero_ps();
  const __m512 s = _mm512_set1_ps(0.5f);
  for (long i = 0; i < n; i += 4) {
    FourUnits();
    StoreFour();
    for (int k = 0; k < 4; ++k)
      for (int t = 0; t < 16; ++t)
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(C[k][t])),
                                 _mm512_mul_ps(s, s), acc[t]);
  }
  float x = 0;
  for (int t = 0; t < 16; ++t) x += _mm512_reduce_add_ps(acc[t]);
  sink = x;
}

T static void EpilogueOnly(long n) {
  __m512 acc[16];
  for (int t = 0; t < 16; ++t) acc[t] = _mm512_setzero_ps();
  const __m512 s = _mm512_set1_ps(0.5f);
  for (long i = 0; i < n; i += 4) {
    for (int k = 0; k < 4; ++k)
      for (int t = 0; t < 16; ++t)
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(C[k][t])),
                                 _mm512_mul_ps(s, s), acc[t]);
    __asm__ volatile("" ::: "memory");
  }
  float x = 0;
  for (int t = 0; t < 16; ++t) x += _mm512_reduce_add_ps(acc[t]);
  sink = x;
}

T static void CfgRelease(long n) {
  for (long i = 0; i < n; ++i) {
    Config();
    _tile_zero(0);
    _tile_release();
  }
}

T static void VnniEquivalent(long n) {  // 16 rows x 16 tokens x 32 columns with vpdpbusd
  __m512i acc[16];
  for (int t = 0; t < 16; ++t) acc[t] = _mm512_setzero_si512();
  const __m512i w0 = _mm512_load_si512(B), w1 = _mm512_load_si512(B + 64);
  for (long i = 0; i < n; ++i) {
    for (int j = 0; j < 4; ++j)
      for (int t = 0; t < 16; ++t)
        acc[t] = _mm512_dpbusd_epi32(acc[t], j & 1 ? w1 : w0, _mm512_set1_epi32(t + j));
    for (int j = 0; j < 4; ++j)
      for (int t = 0; t < 16; ++t)
        acc[t] = _mm512_dpbusd_epi32(acc[t], j & 1 ? w0 : w1, _mm512_set1_epi32(t - j));
    __asm__ volatile("" ::: "memory");
  }
  int x = 0;
  for (int t = 0; t < 16; ++t) x += _mm512_reduce_add_epi32(acc[t]);
  sink = x;
}

T int main() {
  if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) {
    std::puts("no AMX permission");
    return 1;
  }
  for (int i = 0; i < 16 * 64; ++i) A[i] = static_cast<int8_t>(i * 7);
  for (int i = 0; i < 8 * 64; ++i) B[i] = static_cast<uint8_t>(i * 3);
  Config();
  const long n = 4000000;
  Ns("tdpbsud only (4 C tiles)", n, TdpOnly);
  Ns("tileload A,B + zero + tdpbsud", n, LoadsTdp);
  Ns("... + tilestored C", n, LoadsTdpStore);
  Ns("... + 16 vector loads, cvt, mul, fma (full unit)", n, Full);
  Ns("epilogue alone (16 loads, cvt, mul, fma)", n, EpilogueOnly);
  Ns("vpdpbusd: the same 8192 multiply-adds (8 x 16)", n / 4, VnniEquivalent);
  _tile_release();
  Ns("ldtilecfg + tilezero + tilerelease", n / 10, CfgRelease);
  return 0;
}
