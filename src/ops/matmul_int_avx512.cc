// AVX-512 VNNI integer kernels (vpdpbusd: u8 weights x s8 activations -> int32). Only used
// after GetCpuFeatures().avx512 && avx512_vnni.
#include "ops/cpu_features.h"
#include "ops/matmul_int.h"
#include "ops/matmul_int_kquant.h"

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#define JISU_VNNI \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define JISU_VNNI_INLINE JISU_VNNI inline __attribute__((always_inline))

namespace jisu::matmul_internal {
namespace {

JISU_VNNI_INLINE float F16At(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// The 32 unsigned weight bytes of block `blk` (see matmul_int.h).
template <WeightKind K>
JISU_VNNI_INLINE __m256i BlockU8(const uint8_t* blk) {
  if constexpr (K == kWQ8_0) {
    return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)),
                            _mm256_set1_epi8(static_cast<char>(0x80)));
  } else {
    const __m128i q =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + (K == kWQ4_1 ? 4 : 2)));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));
  }
}

// dw and the float correction c = m - z * dw of one block.
template <WeightKind K>
JISU_VNNI_INLINE void BlockScales(const uint8_t* blk, float* dw, float* c) {
  *dw = F16At(blk);
  if constexpr (K == kWQ4_1) {
    *c = F16At(blk + 2);
  } else {
    *c = -static_cast<float>(IntZeroPoint(K)) * *dw;
  }
}

// R rows x NT tokens; each block pair of a row is one zmm.
template <WeightKind K, int NT, int R>
JISU_VNNI_INLINE void IntDotGroup(const uint8_t* row0, size_t row_bytes, int64_t nb,
                                  const QuantizedActs& a, int64_t t0, float* y, int64_t y_stride) {
  constexpr size_t kBB = IntBlockBytes(K);
  __m512 acc[R][NT];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  const int8_t* qs[NT];
  const float *dl[NT], *sl[NT];
  for (int t = 0; t < NT; ++t) {
    qs[t] = a.Qs(t0 + t);
    dl[t] = a.Dl(t0 + t);
    sl[t] = a.Sl(t0 + t);
  }
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    __m512i w[R];
    __m512 dw[R], c[R];
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = row0 + r * row_bytes + b * kBB;
      w[r] = _mm512_inserti64x4(_mm512_castsi256_si512(BlockU8<K>(blk)), BlockU8<K>(blk + kBB), 1);
      float d0, d1, c0, c1;
      BlockScales<K>(blk, &d0, &c0);
      BlockScales<K>(blk + kBB, &d1, &c1);
      dw[r] = _mm512_insertf32x8(_mm512_set1_ps(d0), _mm256_set1_ps(d1), 1);
      c[r] = _mm512_insertf32x8(_mm512_set1_ps(c0), _mm256_set1_ps(c1), 1);
    }
    for (int t = 0; t < NT; ++t) {
      const __m512i av = _mm512_loadu_si512(qs[t] + b * 32);
      const __m512 dlv = _mm512_loadu_ps(dl[t] + b * 8);
      const __m512 slv = _mm512_loadu_ps(sl[t] + b * 8);
      for (int r = 0; r < R; ++r) {
        const __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[r], av);
        acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw[r], dlv), acc[r][t]);
        acc[r][t] = _mm512_fmadd_ps(slv, c[r], acc[r][t]);
      }
    }
  }
  if (b < nb) {  // odd block count: the last block alone in the low half
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = row0 + r * row_bytes + b * kBB;
      const __m512i w = _mm512_castsi256_si512(BlockU8<K>(blk));
      const __m512i wz = _mm512_maskz_mov_epi64(0x0f, w);
      float d0, c0;
      BlockScales<K>(blk, &d0, &c0);
      const __m512 dw = _mm512_set1_ps(d0), c = _mm512_set1_ps(c0);
      for (int t = 0; t < NT; ++t) {
        const __m512i av = _mm512_maskz_loadu_epi8(0xffffffffull, qs[t] + b * 32);
        const __m512 dlv = _mm512_maskz_loadu_ps(0xff, dl[t] + b * 8);
        const __m512 slv = _mm512_maskz_loadu_ps(0xff, sl[t] + b * 8);
        const __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wz, av);
        acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, dlv), acc[r][t]);
        acc[r][t] = _mm512_fmadd_ps(slv, c, acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) y[t * y_stride + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

template <WeightKind K, int NT>
JISU_VNNI void IntDotT(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
                       int64_t t0, float* y, int64_t y_stride) {
  const int64_t nb = a.cols / 32;
  int64_t r = 0;
  for (; r + 2 <= num_rows; r += 2) {
    IntDotGroup<K, NT, 2>(w + static_cast<size_t>(r) * row_bytes, row_bytes, nb, a, t0, y + r,
                          y_stride);
  }
  if (r < num_rows) {
    IntDotGroup<K, NT, 1>(w + static_cast<size_t>(r) * row_bytes, row_bytes, nb, a, t0, y + r,
                          y_stride);
  }
}

template <WeightKind K>
JISU_VNNI void IntDot(const uint8_t* w, size_t row_bytes, int64_t num_rows, const QuantizedActs& a,
                      int64_t t0, int num_tokens, float* y, int64_t y_stride) {
  switch (num_tokens) {
    case 1:
      return IntDotT<K, 1>(w, row_bytes, num_rows, a, t0, y, y_stride);
    case 2:
      return IntDotT<K, 2>(w, row_bytes, num_rows, a, t0, y, y_stride);
    case 3:
      return IntDotT<K, 3>(w, row_bytes, num_rows, a, t0, y, y_stride);
    default:
      return IntDotT<K, 4>(w, row_bytes, num_rows, a, t0, y, y_stride);
  }
}

constexpr int kMr = 4;

// NT tokens x kIntNr (= 2 zmm) rows. Per block: int32 sums start at -z * sum(a) (the zero
// point, exact in integers), 8 vpdpbusd steps of 4 bytes, then one float scale per lane.
//
// Q6_K panels (PackQ6_K: signed values, a scale per half block): vpdpbusd takes the
// activations as unsigned bytes a + 128 and the weights as signed, and per half block
// 128 * sum(w) (one vpdpbusd of 0x80 bytes per group, shared by the tokens) is taken off.
template <int NT>
JISU_VNNI_INLINE void Q6Block(const uint8_t* pb, const int8_t* const* qs, const float* const* ds,
                              int64_t b, __m512 (&f)[NT][2]) {
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  const float* dwp = reinterpret_cast<const float*>(pb + 8 * kIntNr * 4);
  for (int half = 0; half < 2; ++half) {
    __m512i ia[NT][2];
    for (int t = 0; t < NT; ++t) ia[t][0] = ia[t][1] = _mm512_setzero_si512();
    __m512i corr0 = _mm512_setzero_si512(), corr1 = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int g = 4 * half; g < 4 * half + 4; ++g) {
      const __m512i w0 = _mm512_load_si512(pb + g * 128);
      const __m512i w1 = _mm512_load_si512(pb + g * 128 + 64);
      corr0 = _mm512_dpbusd_epi32(corr0, bias, w0);
      corr1 = _mm512_dpbusd_epi32(corr1, bias, w1);
      for (int t = 0; t < NT; ++t) {
        uint32_t a4;
        std::memcpy(&a4, qs[t] + b * 32 + 4 * g, 4);
        const __m512i av = _mm512_set1_epi32(static_cast<int>(a4 ^ 0x80808080u));
        ia[t][0] = _mm512_dpbusd_epi32(ia[t][0], av, w0);
        ia[t][1] = _mm512_dpbusd_epi32(ia[t][1], av, w1);
      }
    }
    const __m512 s0 = _mm512_load_ps(dwp + half * kIntNr);
    const __m512 s1 = _mm512_load_ps(dwp + half * kIntNr + 16);
    for (int t = 0; t < NT; ++t) {
      const __m512 da = _mm512_set1_ps(ds[t][b]);
      f[t][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(ia[t][0], corr0)),
                                _mm512_mul_ps(s0, da), f[t][0]);
      f[t][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(ia[t][1], corr1)),
                                _mm512_mul_ps(s1, da), f[t][1]);
    }
  }
}

template <WeightKind K, int NT>
JISU_VNNI_INLINE void IntGemmT(int64_t nblocks, const uint8_t* panel, const QuantizedActs& a,
                               int64_t t0, int64_t b0, float* c, int64_t ldc, int valid_rows,
                               bool accumulate) {
  constexpr int z = IntZeroPoint(K);
  __m512 f[NT][2];
  for (int t = 0; t < NT; ++t) f[t][0] = f[t][1] = _mm512_setzero_ps();
  const int8_t* qs[NT];
  const float* ds[NT];
  const int32_t* sums[NT];
  for (int t = 0; t < NT; ++t) {
    qs[t] = a.Qs(t0 + t) + b0 * 32;
    ds[t] = a.D(t0 + t) + b0;
    sums[t] = a.Sum(t0 + t) + b0;
  }
  for (int64_t b = 0; b < nblocks; ++b) {
    const uint8_t* pb = panel + b * kIntPanelBlockBytes;
    if constexpr (K == kWQ6_K) {
      Q6Block<NT>(pb, qs, ds, b, f);
      continue;
    }
    __m512i ia[NT][2];
    for (int t = 0; t < NT; ++t) {
      ia[t][0] = ia[t][1] = _mm512_set1_epi32(-z * sums[t][b]);
    }
#pragma GCC unroll 8
    for (int g = 0; g < 8; ++g) {
      const __m512i w0 = _mm512_load_si512(pb + g * 128);
      const __m512i w1 = _mm512_load_si512(pb + g * 128 + 64);
      for (int t = 0; t < NT; ++t) {
        int32_t a4;
        std::memcpy(&a4, qs[t] + b * 32 + 4 * g, 4);
        const __m512i av = _mm512_set1_epi32(a4);
        ia[t][0] = _mm512_dpbusd_epi32(ia[t][0], w0, av);
        ia[t][1] = _mm512_dpbusd_epi32(ia[t][1], w1, av);
      }
    }
    const float* dwp = reinterpret_cast<const float*>(pb + 8 * kIntNr * 4);
    const __m512 dw0 = _mm512_load_ps(dwp), dw1 = _mm512_load_ps(dwp + 16);
    for (int t = 0; t < NT; ++t) {
      const __m512 da = _mm512_set1_ps(ds[t][b]);
      f[t][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[t][0]), _mm512_mul_ps(dw0, da), f[t][0]);
      f[t][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[t][1]), _mm512_mul_ps(dw1, da), f[t][1]);
    }
    if constexpr (K == kWQ4_1) {
      const __m512 m0 = _mm512_load_ps(dwp + 32), m1 = _mm512_load_ps(dwp + 48);
      for (int t = 0; t < NT; ++t) {
        const __m512 s = _mm512_set1_ps(ds[t][b] * static_cast<float>(sums[t][b]));
        f[t][0] = _mm512_fmadd_ps(m0, s, f[t][0]);
        f[t][1] = _mm512_fmadd_ps(m1, s, f[t][1]);
      }
    }
  }
  const __mmask16 k0 = static_cast<__mmask16>(valid_rows >= 16 ? 0xffff : (1u << valid_rows) - 1);
  const __mmask16 k1 = static_cast<__mmask16>(
      valid_rows >= 32 ? 0xffff : (valid_rows <= 16 ? 0 : (1u << (valid_rows - 16)) - 1));
  for (int t = 0; t < NT; ++t) {
    float* ct = c + t * ldc;
    if (accumulate) {
      f[t][0] = _mm512_add_ps(f[t][0], _mm512_maskz_loadu_ps(k0, ct));
      f[t][1] = _mm512_add_ps(f[t][1], _mm512_maskz_loadu_ps(k1, ct + 16));
    }
    _mm512_mask_storeu_ps(ct, k0, f[t][0]);
    _mm512_mask_storeu_ps(ct + 16, k1, f[t][1]);
  }
}

template <WeightKind K>
JISU_VNNI void IntGemm(int64_t nblocks, const uint8_t* panel, const QuantizedActs& a, int64_t t0,
                       int num_tokens, int64_t b0, float* c, int64_t ldc, int valid_rows,
                       bool accumulate) {
  switch (num_tokens) {
    case 1:
      return IntGemmT<K, 1>(nblocks, panel, a, t0, b0, c, ldc, valid_rows, accumulate);
    case 2:
      return IntGemmT<K, 2>(nblocks, panel, a, t0, b0, c, ldc, valid_rows, accumulate);
    case 3:
      return IntGemmT<K, 3>(nblocks, panel, a, t0, b0, c, ldc, valid_rows, accumulate);
    default:
      return IntGemmT<K, kMr>(nblocks, panel, a, t0, b0, c, ldc, valid_rows, accumulate);
  }
}

constexpr IntKernelSet kVnni = {
    "avx512-vnni-int8",
    // K-quants: the AVX2 integer dot kernels (every AVX-512 CPU runs them). Without them an
    // AVX-512 machine decoded K-quants on the float dot, which the integer dot beat 2.2-2.9x
    // on Zen 3 (bench/results/2026-12-01-cpu-kquant-int-avx2.md); on a Sapphire Rapids host,
    // 5632 x 2048, 1 thread, medians of 3: 1.6x (q4_k) / 2.0x (q6_k) at one token, 1.1x / 1.25x
    // at 4, 1.0x / 1.6x at 12 (bench/results/2026-12-01-cpu-avx512-host.md).
    {nullptr, nullptr, nullptr, IntDot<kWQ8_0>, IntDot<kWQ4_0>, IntDot<kWQ4_1>, IntDotQ4_KAvx2,
     IntDotQ5_KAvx2, IntDotQ6_KAvx2},
    // Q4_K and Q5_K: packed into Q4_1 panels (PackIntPanel), so the Q4_1 micro-kernel (exact
    // int32 sums for Q5_K's 5-bit values too); Q6_K: signed panels, its own kernel.
    {nullptr, nullptr, nullptr, IntGemm<kWQ8_0>, IntGemm<kWQ4_0>, IntGemm<kWQ4_1>, IntGemm<kWQ4_1>,
     IntGemm<kWQ4_1>, IntGemm<kWQ6_K>},
    kMr,
    "avx2-int8",
};

// Packs rows of one panel (see matmul_int.h) 16 at a time: four 16-byte row slices per zmm,
// a dword permute and a 4x4 transpose of 128-bit lanes turn "row-major dwords" into "dword j
// of 16 consecutive rows", which is one 64-byte store of the panel per group of 4 elements.
JISU_VNNI_INLINE void Transpose16x4(const uint8_t* const* p, __m512i out[4]) {
  const __m512i tr = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  __m512i z[4];
  for (int k = 0; k < 4; ++k) {
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p[4 * k])));
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p[4 * k + 1])), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p[4 * k + 2])), 2);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p[4 * k + 3])), 3);
    z[k] = _mm512_permutexvar_epi32(tr, v);  // lane j: dword j of rows 4k .. 4k+3
  }
  const __m512i t0 = _mm512_shuffle_i32x4(z[0], z[1], _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i t1 = _mm512_shuffle_i32x4(z[0], z[1], _MM_SHUFFLE(3, 2, 3, 2));
  const __m512i t2 = _mm512_shuffle_i32x4(z[2], z[3], _MM_SHUFFLE(1, 0, 1, 0));
  const __m512i t3 = _mm512_shuffle_i32x4(z[2], z[3], _MM_SHUFFLE(3, 2, 3, 2));
  out[0] = _mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(2, 0, 2, 0));
  out[1] = _mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(3, 1, 3, 1));
  out[2] = _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(2, 0, 2, 0));
  out[3] = _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(3, 1, 3, 1));
}

// 16 consecutive rows' IEEE halves at p, p + stride, ... as floats.
JISU_VNNI __m512 Halves16(const uint8_t* p, size_t stride) {
  alignas(32) uint16_t h[16];
  for (int i = 0; i < 16; ++i) std::memcpy(&h[i], p + i * stride, 2);
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(h)));
}

// A full panel (all kIntNr rows; w at block 0 of row 0). Row addresses are computed and the
// scales of 16 rows convert in one vcvtph2ps; each row's bytes a few cache lines ahead are
// requested once per 64 bytes of progress (the 32 row streams defeat the hardware prefetcher;
// the same change on the AVX2 packer: bench/results/2026-12-01-cpu-pack-prefetch.md).
template <WeightKind K>
JISU_VNNI void PackFullPanel(const uint8_t* w, size_t row_bytes, int64_t nblocks, uint8_t* panel) {
  constexpr size_t kBB = IntBlockBytes(K);
  static_assert(kBB <= 64, "one prefetch per row and cache line");
  constexpr size_t kPrefetchBytes = 768;
  constexpr int64_t kPrefetchEvery = 64 / kBB;
  constexpr size_t kQsOffset = K == kWQ4_1 ? 4 : 2;
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t b = 0; b < nblocks; ++b) {
    uint8_t* pb = panel + b * kIntPanelBlockBytes;
    const uint8_t* col = w + b * kBB;  // block b of row 0
    if (b % kPrefetchEvery == 0) {
      for (int r = 0; r < kIntNr; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(col + r * row_bytes + kPrefetchBytes),
                     _MM_HINT_T0);
      }
    }
    for (int h = 0; h < 2; ++h) {
      const uint8_t* p[16];
      __m512i out[4];
      for (int part = 0; part < (K == kWQ8_0 ? 2 : 1); ++part) {
        for (int i = 0; i < 16; ++i) p[i] = col + (16 * h + i) * row_bytes + kQsOffset + 16 * part;
        Transpose16x4(p, out);
        for (int j = 0; j < 4; ++j) {
          if constexpr (K == kWQ8_0) {
            _mm512_store_si512(pb + (4 * part + j) * 128 + h * 64, _mm512_xor_si512(out[j], flip));
          } else {
            _mm512_store_si512(pb + j * 128 + h * 64, _mm512_and_si512(out[j], low4));
            _mm512_store_si512(pb + (j + 4) * 128 + h * 64,
                               _mm512_and_si512(_mm512_srli_epi16(out[j], 4), low4));
          }
        }
      }
      auto* dw = reinterpret_cast<float*>(pb + 8 * kIntNr * 4);
      const uint8_t* r16 = col + 16 * h * row_bytes;
      _mm512_store_ps(dw + 16 * h, Halves16(r16, row_bytes));
      _mm512_store_ps(dw + kIntNr + 16 * h,
                      K == kWQ4_1 ? Halves16(r16 + 2, row_bytes) : _mm512_setzero_ps());
    }
  }
}

}  // namespace

const IntKernelSet* Avx512VnniIntKernels() { return &kVnni; }

bool PackIntPanelAvx512(WeightKind kind, const uint8_t* w, size_t row_bytes, int valid_rows,
                        int64_t b0, int64_t nblocks, uint8_t* panel) {
  static const bool ok = GetCpuFeatures().avx512 && GetCpuFeatures().avx512_vnni;
  if (!ok) return false;
  switch (kind) {
    case kWQ8_0:
      PackPanelWith<kWQ8_0>(w, row_bytes, valid_rows, b0, nblocks, panel, PackFullPanel<kWQ8_0>);
      return true;
    case kWQ4_0:
      PackPanelWith<kWQ4_0>(w, row_bytes, valid_rows, b0, nblocks, panel, PackFullPanel<kWQ4_0>);
      return true;
    case kWQ4_1:
      PackPanelWith<kWQ4_1>(w, row_bytes, valid_rows, b0, nblocks, panel, PackFullPanel<kWQ4_1>);
      return true;
    default:
      return false;
  }
}

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
const IntKernelSet* Avx512VnniIntKernels() { return nullptr; }
bool PackIntPanelAvx512(WeightKind, const uint8_t*, size_t, int, int64_t, int64_t, uint8_t*) {
  return false;
}
}  // namespace jisu::matmul_internal

#endif
