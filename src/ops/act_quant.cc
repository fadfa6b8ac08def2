#include "ops/act_quant.h"

#include <new>

namespace jisu {

ActQuantBuffer::~ActQuantBuffer() {
  if (data_ != nullptr) ::operator delete (data_, std::align_val_t{64});
}

QuantizedActs ActQuantBuffer::Prepare(int64_t num_tokens, int64_t cols) {
  const int64_t nb = cols / 32;
  const size_t n = static_cast<size_t>(num_tokens);
  const size_t qs_bytes = (n * cols + 63) / 64 * 64;
  const size_t blk_bytes = (n * nb * 4 + 63) / 64 * 64;
  const size_t lane_bytes = (n * (cols / 4) * 4 + 63) / 64 * 64;
  const size_t need = qs_bytes + 2 * blk_bytes + 2 * lane_bytes;
  if (need > capacity_) {
    if (data_ != nullptr) ::operator delete (data_, std::align_val_t{64});
    data_ = ::operator new (need, std::align_val_t{64});
    capacity_ = need;
  }
  auto* base = static_cast<uint8_t*>(data_);
  cols_ = cols;
  qs_ = reinterpret_cast<int8_t*>(base);
  d_ = reinterpret_cast<float*>(base + qs_bytes);
  sum_ = reinterpret_cast<int32_t*>(base + qs_bytes + blk_bytes);
  dl_ = reinterpret_cast<float*>(base + qs_bytes + 2 * blk_bytes);
  sl_ = reinterpret_cast<float*>(base + qs_bytes + 2 * blk_bytes + lane_bytes);
  QuantizedActs a;
  a.cols = cols;
  a.num_tokens = num_tokens;
  a.qs = qs_;
  a.d = d_;
  a.sum = sum_;
  a.dl = dl_;
  a.sl = sl_;
  return a;
}

void ActQuantBuffer::QuantizeTokens(const float* x, int64_t x_stride, int64_t t0, int64_t t1) {
  const act_quant_internal::ActQuantRows out{cols_, qs_, d_, sum_, dl_, sl_};
  if (act_quant_internal::QuantizeRowsAvx512(x, x_stride, t0, t1, out)) return;
  if (act_quant_internal::QuantizeRowsAvx2(x, x_stride, t0, t1, out)) return;
  if (act_quant_internal::QuantizeRowsNeon(x, x_stride, t0, t1, out)) return;
  act_quant_internal::QuantizeRowsScalar(x, x_stride, t0, t1, out);
}

namespace act_quant_internal {

void QuantizeRowsScalar(const float* x, int64_t x_stride, int64_t t0, int64_t t1,
                        const ActQuantRows& out) {
  const int64_t cols = out.cols;
  const int64_t nb = cols / 32;
  int8_t* qs = out.qs;
  float* d = out.d;
  int32_t* sum = out.sum;
  float* dl = out.dl;
  float* sl = out.sl;
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * x_stride;
    for (int64_t b = 0; b < nb; ++b) {
      const float* v = xt + b * 32;
      float amax = 0.0f;
      for (int i = 0; i < 32; ++i) {
        const float m = v[i] < 0.0f ? -v[i] : v[i];
        amax = m > amax ? m : amax;
      }
      const float db = amax / 127.0f;
      const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
      int8_t* q = qs + t * cols + b * 32;
      int32_t s = 0;
      for (int i = 0; i < 32; ++i) {
        const float u = v[i] * id;
        // Round half away from zero; |u| <= 127 (+ rounding) so the cast cannot overflow.
        int qi = static_cast<int>(u + (u >= 0.0f ? 0.5f : -0.5f));
        qi = qi > 127 ? 127 : (qi < -127 ? -127 : qi);
        q[i] = static_cast<int8_t>(qi);
        s += qi;
      }
      d[t * nb + b] = db;
      sum[t * nb + b] = s;
      for (int g = 0; g < 8; ++g) {
        const int32_t s4 = q[4 * g] + q[4 * g + 1] + q[4 * g + 2] + q[4 * g + 3];
        dl[t * (cols / 4) + b * 8 + g] = db;
        sl[t * (cols / 4) + b * 8 + g] = db * static_cast<float>(s4);
      }
    }
  }
}

}  // namespace act_quant_internal
}  // namespace jisu
