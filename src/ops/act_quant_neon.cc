// AArch64 NEON activation quantizer: the same per-element float operations as
// QuantizeRowsScalar (x * (127 / amax), + or - 0.5, truncate, clamp), so the bytes, scales and
// sums are bit-identical; only the loops are vectorized.
#include "ops/act_quant.h"

#if defined(__aarch64__)
#include <arm_neon.h>

namespace jisu::act_quant_internal {
namespace {

// 4 floats times id, rounded half away from zero and clamped to [-127, 127], as int32.
inline int32x4_t Round4(float32x4_t v, float32x4_t id) {
  const float32x4_t u = vmulq_f32(v, id);
  // u >= 0 (including -0.0, as in the scalar code) adds +0.5, else -0.5.
  const float32x4_t half =
      vbslq_f32(vcgeq_f32(u, vdupq_n_f32(0.0f)), vdupq_n_f32(0.5f), vdupq_n_f32(-0.5f));
  const int32x4_t q = vcvtq_s32_f32(vaddq_f32(u, half));  // truncates toward zero
  return vmaxq_s32(vminq_s32(q, vdupq_n_s32(127)), vdupq_n_s32(-127));
}

}  // namespace

bool QuantizeRowsNeon(const float* x, int64_t x_stride, int64_t t0, int64_t t1,
                      const ActQuantRows& out) {
  const int64_t cols = out.cols;
  const int64_t nb = cols / 32;
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * x_stride;
    int8_t* qt = out.qs + t * cols;
    float* dlt = out.dl + t * (cols / 4);
    float* slt = out.sl + t * (cols / 4);
    for (int64_t b = 0; b < nb; ++b) {
      float32x4_t v[8];
      for (int k = 0; k < 8; ++k) v[k] = vld1q_f32(xt + b * 32 + 4 * k);
      // fmaxnm ignores NaN as the scalar comparison does.
      float32x4_t m = vabsq_f32(v[0]);
      for (int k = 1; k < 8; ++k) m = vmaxnmq_f32(m, vabsq_f32(v[k]));
      const float amax = vmaxnmvq_f32(m);
      const float db = amax / 127.0f;
      const float idf = amax > 0.0f ? 127.0f / amax : 0.0f;
      const float32x4_t id = vdupq_n_f32(idf);
      int8x8_t q8[4];
      for (int k = 0; k < 4; ++k) {
        // Values are within [-127, 127]: the saturating narrows never saturate.
        const int16x8_t q16 =
            vcombine_s16(vqmovn_s32(Round4(v[2 * k], id)), vqmovn_s32(Round4(v[2 * k + 1], id)));
        q8[k] = vqmovn_s16(q16);
      }
      const int8x16_t q01 = vcombine_s8(q8[0], q8[1]);
      const int8x16_t q23 = vcombine_s8(q8[2], q8[3]);
      vst1q_s8(qt + b * 32, q01);
      vst1q_s8(qt + b * 32 + 16, q23);
      // Sums of each 4 consecutive values (exact): pairwise widening adds, twice.
      const int32x4_t s4a = vpaddlq_s16(vpaddlq_s8(q01));
      const int32x4_t s4b = vpaddlq_s16(vpaddlq_s8(q23));
      const float32x4_t dbv = vdupq_n_f32(db);
      vst1q_f32(dlt + b * 8, dbv);
      vst1q_f32(dlt + b * 8 + 4, dbv);
      vst1q_f32(slt + b * 8, vmulq_f32(dbv, vcvtq_f32_s32(s4a)));
      vst1q_f32(slt + b * 8 + 4, vmulq_f32(dbv, vcvtq_f32_s32(s4b)));
      out.d[t * nb + b] = db;
      out.sum[t * nb + b] = vaddvq_s32(vaddq_s32(s4a, s4b));
    }
  }
  return true;
}

}  // namespace jisu::act_quant_internal

#else

namespace jisu::act_quant_internal {
bool QuantizeRowsNeon(const float*, int64_t, int64_t, int64_t, const ActQuantRows&) {
  return false;
}
}  // namespace jisu::act_quant_internal

#endif
