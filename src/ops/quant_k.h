// GGUF "K-quant" block formats: 256-element super-blocks split into sub-blocks, with the
// sub-block scales themselves quantized against one f16 super-block scale. Bit-exact GGUF
// layouts (gguf-py quants.py / ggml-common.h); elements are numbered 0..255 within a block.
//
//   Q4_K (144 bytes): f16 d, f16 dmin, 12 bytes of packed 6-bit (scale, min) pairs for eight
//     32-element sub-blocks, 128 bytes of nibbles.        x = (d*sc_j) * q - (dmin*m_j)
//     Sub-block j's element i is byte 32*(j/2) + i, low nibble for even j, high for odd j.
//   Q5_K (176 bytes): as Q4_K plus qh[32] between the scales and the nibbles; bit j of qh[i]
//     is bit 4 of sub-block j's element i (q in 0..31).
//   Q6_K (210 bytes): ql[128], qh[64], int8 scales[16] (one per 16 elements), f16 d.
//     Element 128h + 32k + i (h < 2, k < 4, i < 32): low 4 bits from ql[64h + 32(k%2) + i]
//     (low nibble for k < 2, high otherwise), high 2 bits = (qh[32h + i] >> 2k) & 3;
//     x = (d*scales[e/16]) * (q - 32).
//
//   Q2_K (84 bytes): scales[16] (low nibble scale, high nibble min, per 16 elements), qs[64],
//     f16 d, f16 dmin. Element 128h + 32k + i: q = (qs[32h + i] >> 2k) & 3;
//     x = (d*sc) * q - (dmin*m).
//   Q3_K (110 bytes): hmask[32], qs[64], 12 bytes of 6-bit scales, f16 d. Element e =
//     128h + 32k + i: low 2 bits as Q2_K, minus 4 unless bit e/32 of hmask[i] is set;
//     scale s (per 16): low 4 bits from byte s (s < 8) or the high nibble of byte s - 8, high
//     2 bits = (byte[8 + s % 4] >> 2*(s / 4)) & 3, minus 32; x = (d*scale) * q.
//     (Q2_K/Q3_K: MatMul runs them through the reference dequantizer on every ISA: correct,
//     not fast.)
//
// The (scale, min) packing of Q4_K/Q5_K, for sub-block j < 4 and its partner j + 4:
//   bytes[j]     = sc[j]  | (sc[j+4] >> 4) << 6      bytes[j+4] = m[j] | (m[j+4] >> 4) << 6
//   bytes[j+8]   = (sc[j+4] & 15) | (m[j+4] & 15) << 4
#pragma once

#include <cstdint>

namespace jisu {

constexpr int kQK_K = 256;  // elements per K-quant super-block

struct BlockQ4_K {
  uint16_t d;     // f16 super-block scale of the sub-block scales
  uint16_t dmin;  // f16 super-block scale of the sub-block mins
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;  // f16
};
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);

// 6-bit scale and min of sub-block j (0..7) from a Q4_K/Q5_K scales[12] array.
inline void UnpackScaleMinK4(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// nb blocks <-> nb * 256 floats. Dequantization repeats gguf-py's float32 operations exactly
// (scale products first, then one multiply and one subtract), so results are bit-identical.
void DequantizeQ2_K(const BlockQ2_K* in, float* y, int64_t nb);
void DequantizeQ3_K(const BlockQ3_K* in, float* y, int64_t nb);
void DequantizeQ4_K(const BlockQ4_K* in, float* y, int64_t nb);
void DequantizeQ5_K(const BlockQ5_K* in, float* y, int64_t nb);
void DequantizeQ6_K(const BlockQ6_K* in, float* y, int64_t nb);

// Our own quantizers (not llama.cpp's bit for bit): a least-squares (scale, min) fit per
// sub-block over a few candidate scales, then the sub-block scales quantized to 6 (Q4_K/Q5_K)
// or 8 (Q6_K) bits and the elements re-rounded against the scales actually stored.
void QuantizeQ2_K(const float* x, BlockQ2_K* out, int64_t nb);
void QuantizeQ3_K(const float* x, BlockQ3_K* out, int64_t nb);
void QuantizeQ4_K(const float* x, BlockQ4_K* out, int64_t nb);
void QuantizeQ5_K(const float* x, BlockQ5_K* out, int64_t nb);
void QuantizeQ6_K(const float* x, BlockQ6_K* out, int64_t nb);

}  // namespace jisu
