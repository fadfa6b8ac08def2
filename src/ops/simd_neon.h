// Helpers shared by the AArch64 NEON kernels of src/ops. NEON is part of the AArch64 baseline,
// so these need no target attribute; the dot-product kernels (SDOT, an Armv8.2-A option) live
// in their own file, built for that extension and chosen at run time (cpu_features.h).
#pragma once

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "core/half.h"

namespace jisu::simd_neon {

// The f16 scale at p (block headers are not 2-byte aligned in every layout).
inline float LoadF16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return F16ToF32(h);
}

// 16 packed bytes of a Q4 block as its 32 4-bit values: lo = elements 0..15 (low nibbles),
// hi = elements 16..31 (high nibbles), 0..15 each.
inline void UnpackNibbles(const uint8_t* qs, uint8x16_t* lo, uint8x16_t* hi) {
  const uint8x16_t b = vld1q_u8(qs);
  *lo = vandq_u8(b, vdupq_n_u8(0x0f));
  *hi = vshrq_n_u8(b, 4);
}

// 16 signed bytes as 16 floats (v[0..3], in order).
inline void S8ToF32(int8x16_t q, float32x4_t v[4]) {
  const int16x8_t lo = vmovl_s8(vget_low_s8(q));
  const int16x8_t hi = vmovl_high_s8(q);
  v[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)));
  v[1] = vcvtq_f32_s32(vmovl_high_s16(lo));
  v[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)));
  v[3] = vcvtq_f32_s32(vmovl_high_s16(hi));
}

// 16 unsigned bytes as 16 floats (v[0..3], in order).
inline void U8ToF32(uint8x16_t q, float32x4_t v[4]) {
  const uint16x8_t lo = vmovl_u8(vget_low_u8(q));
  const uint16x8_t hi = vmovl_high_u8(q);
  v[0] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo)));
  v[1] = vcvtq_f32_u32(vmovl_high_u16(lo));
  v[2] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi)));
  v[3] = vcvtq_f32_u32(vmovl_high_u16(hi));
}

}  // namespace jisu::simd_neon

#endif  // __aarch64__
