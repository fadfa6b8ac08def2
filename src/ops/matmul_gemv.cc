// Activation rearrangement for the decode GEMV (see matmul_gemv.h) and its portable kernel.
#include "ops/matmul_gemv.h"

#include <cstring>
#include <new>

#include "core/half.h"
#include "ops/matmul_int.h"

namespace jisu::matmul_internal {

GemvActBuffer::~GemvActBuffer() {
  if (data_ != nullptr) ::operator delete (data_, std::align_val_t{64});
}

GemvActs GemvActBuffer::Prepare(const QuantizedActs& a, int64_t t) {
  const int64_t nb = a.cols / 32;
  const int64_t pairs = (nb + 1) / 2;
  const size_t need = static_cast<size_t>(pairs) * (64 * 2 + 16 * 4 * 4);
  if (need > capacity_) {
    if (data_ != nullptr) ::operator delete (data_, std::align_val_t{64});
    data_ = ::operator new (need, std::align_val_t{64});
    capacity_ = need;
  }
  auto* base = static_cast<uint8_t*>(data_);
  auto* q4 = reinterpret_cast<int8_t*>(base);
  auto* qn = q4 + pairs * 64;
  auto* off4 = reinterpret_cast<int32_t*>(qn + pairs * 64);
  auto* off8 = off4 + pairs * 16;
  auto* da4 = reinterpret_cast<float*>(off8 + pairs * 16);
  auto* dan = da4 + pairs * 16;
  const int8_t* qs = a.Qs(t);
  const float* d = a.D(t);
  if (nb % 2 != 0) {  // the missing block of the last pair is zero everywhere
    const int64_t p = pairs - 1;
    std::memset(q4 + p * 64, 0, 64);
    std::memset(qn + p * 64, 0, 64);
    std::memset(da4 + p * 16, 0, 64);
    std::memset(dan + p * 16, 0, 64);
  }
  std::memcpy(qn, qs, static_cast<size_t>(nb) * 32);
  for (int64_t p = 0; p < pairs; ++p) {
    for (int c = 0; c < 4; ++c) {
      const int64_t b = 2 * p + (c & 1);
      if (b >= nb) continue;
      std::memcpy(q4 + p * 64 + c * 16, qs + b * 32 + (c >> 1) * 16, 16);
      for (int j = 0; j < 4; ++j) da4[p * 16 + c * 4 + j] = d[b];
    }
    for (int l = 0; l < 16; ++l) {
      const int64_t b = 2 * p + l / 8;
      if (b < nb) dan[p * 16 + l] = d[b];
    }
  }
  for (int64_t i = 0; i < pairs * 16; ++i) {
    int32_t s4 = 0, s8 = 0;
    for (int k = 0; k < 4; ++k) {
      s4 += q4[i * 4 + k];
      s8 += qn[i * 4 + k];
    }
    off4[i] = -8 * s4;
    off8[i] = -128 * s8;
  }
  return GemvActs{nb, pairs, q4, off4, da4, qn, off8, dan};
}

GemvFn GemvFor(Isa isa, WeightKind kind, const char** name) {
  GemvFn f = nullptr;
  const char* n = nullptr;
  if (isa == Isa::kAvx512 && (f = Avx512VnniGemv(kind)) != nullptr) {
    n = "avx512-vnni-int8 gemv";
  } else if ((isa == Isa::kAvx512 || isa == Isa::kAvx2) && (f = Avx2Gemv(kind)) != nullptr) {
    n = "avx2-int8 gemv";
  }
  if (name != nullptr) *name = n;
  return f;
}

void GemvPortable(WeightKind kind, const uint8_t* w, size_t row_bytes, int64_t num_rows,
                  const GemvActs& acts, float* y) {
  const bool q4 = kind == kWQ4_0;
  const size_t bb = IntBlockBytes(kind);
  for (int64_t r = 0; r < num_rows; ++r) {
    const uint8_t* row = w + static_cast<size_t>(r) * row_bytes;
    float acc = 0.0f;
    for (int64_t p = 0; p < acts.pairs; ++p) {
      // Lane sums as the vector kernel forms them (int32, exact), then one float scale each.
      float pair_acc = 0.0f;
      for (int l = 0; l < 16; ++l) {
        int32_t s = (q4 ? acts.off4 : acts.off8)[p * 16 + l];
        int64_t b;
        if (q4) {
          const int c = l / 4;
          b = 2 * p + (c & 1);
          if (b < acts.blocks) {
            const uint8_t* qs = row + b * bb + 2;
            for (int k = 0; k < 4; ++k) {
              const int e = (l % 4) * 4 + k;  // byte within the 16 of the chunk
              const int u = (c >> 1) == 0 ? (qs[e] & 0x0f) : (qs[e] >> 4);
              s += u * acts.q4[p * 64 + l * 4 + k];
            }
          }
        } else {
          b = 2 * p + l / 8;
          if (b < acts.blocks) {
            const uint8_t* qs = row + b * bb + 2;
            for (int k = 0; k < 4; ++k) {
              const int u = (qs[(l % 8) * 4 + k] ^ 0x80);
              s += u * acts.qn[p * 64 + l * 4 + k];
            }
          }
        }
        if (b >= acts.blocks) continue;
        uint16_t h;
        std::memcpy(&h, row + b * bb, 2);
        const float scale = F16ToF32(h) * (q4 ? acts.da4 : acts.dan)[p * 16 + l];
        pair_acc += static_cast<float>(s) * scale;
      }
      acc += pair_acc;
    }
    y[r] = acc;
  }
}

}  // namespace jisu::matmul_internal
