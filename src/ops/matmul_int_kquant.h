// Internal to src/ops: integer decode dot kernels for the K-quant weights Q4_K, Q5_K and Q6_K
// (layouts in quant_k.h) against the int8 activation blocks of 32 (act_quant.h). They fill the
// K-quant entries of the IntKernelSet tables (matmul_int.h). Prefill: Q4_K packs into Q4_1
// panels for the integer GEMM (matmul_int.cc); Q5_K (5-bit values overflow the int16 sums of
// that kernel) and Q6_K (a scale per 16 elements) stay on the float GEMM (matmul.cc).
//
// One 256-element super-block covers 8 activation blocks j (scale da_j, sum asum_j):
//   Q4_K/Q5_K: x = d*sc_j*q - dmin*m_j, q unsigned (0..15 / 0..31), one (sc_j, m_j) per block j:
//     dot_j = d*da_j*sc_j*(sum q*a) - dmin*m_j*da_j*asum_j
//   Q6_K: x = d*sc_s*(q - 32), q in 0..63, one int8 sc_s per 16 elements (two per block j):
//     dot_j = d*da_j*(sc_2j * sum_{i<16} (q-32)*a + sc_2j+1 * sum_{i>=16} (q-32)*a)
// The integer sums are exact (AVX2: pmaddubsw pair sums stay below 2 * 63 * 127 = 16002, the
// sub-block scale then joins in pmaddwd, far from int32 limits); the float scaling differs
// between the scalar reference and the vector kernels only in rounding order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/act_quant.h"

namespace jisu::matmul_internal {

#define JISU_INT_KQUANT_DOT(Fmt, Isa)                                                 \
  void IntDot##Fmt##Isa(const uint8_t* w, size_t row_bytes, int64_t num_rows,         \
                        const QuantizedActs& a, int64_t t0, int num_tokens, float* y, \
                        int64_t y_stride);

JISU_INT_KQUANT_DOT(Q4_K, Scalar)
JISU_INT_KQUANT_DOT(Q5_K, Scalar)
JISU_INT_KQUANT_DOT(Q6_K, Scalar)
JISU_INT_KQUANT_DOT(Q4_K, Avx2)
JISU_INT_KQUANT_DOT(Q5_K, Avx2)
JISU_INT_KQUANT_DOT(Q6_K, Avx2)

#undef JISU_INT_KQUANT_DOT

// The 6-bit (scale, min) pairs of a Q4_K/Q5_K block's 12 scale bytes as sc[0..7], m[0..7]
// (quant_k.h's packing, four sub-blocks per 32-bit word; little-endian loads, for the x86
// kernels; the scalar reference unpacks with quant_k.h's UnpackScaleMinK4 instead).
inline void UnpackScalesMinsK4(const uint8_t* s, uint8_t sc[8], uint8_t m[8]) {
  uint32_t w0, w1, w2;
  __builtin_memcpy(&w0, s, 4);
  __builtin_memcpy(&w1, s + 4, 4);
  __builtin_memcpy(&w2, s + 8, 4);
  const uint32_t sc_lo = w0 & 0x3f3f3f3fu, m_lo = w1 & 0x3f3f3f3fu;
  const uint32_t sc_hi = (w2 & 0x0f0f0f0fu) | ((w0 >> 2) & 0x30303030u);
  const uint32_t m_hi = ((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 2) & 0x30303030u);
  __builtin_memcpy(sc, &sc_lo, 4);
  __builtin_memcpy(sc + 4, &sc_hi, 4);
  __builtin_memcpy(m, &m_lo, 4);
  __builtin_memcpy(m + 4, &m_hi, 4);
}

}  // namespace jisu::matmul_internal
