// Interleaved layouts (matmul_interleaved.h): the repack, the portable decode dots and the integer
// GEMM panel packer.
#include "ops/matmul_interleaved.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/half.h"
#include "ops/matmul_bf16.h"
#include "ops/matmul_int.h"
#include "ops/quant.h"

namespace jisu::matmul_internal {

size_t InterleavedBytes(WeightKind kind, int64_t rows, int64_t cols) {
  if (!IsInterleavedKind(kind) || rows <= 0 || cols <= 0 || cols % 32 != 0) return 0;
  const int64_t groups = (rows + kIlRows - 1) / kIlRows;
  return static_cast<size_t>(groups * (cols / 32)) * IlRecordBytes(kind);
}

namespace {

// Float kinds' bf16-pair layout (matmul_interleaved.h); F16 rounded to nearest even.
void InterleaveBf16Pairs(WeightKind kind, const uint8_t* w, size_t row_bytes, int64_t rows,
                         int64_t cols, int64_t g0, int64_t g1, uint8_t* out) {
  const int64_t pairs = cols / 2;
  std::vector<float> row_f32(static_cast<size_t>(cols));
  std::vector<uint32_t> row_pairs(static_cast<size_t>(pairs));
  for (int64_t g = g0; g < g1; ++g) {
    auto* o = reinterpret_cast<uint32_t*>(out) + g * pairs * kIlRows;
    std::memset(o, 0, static_cast<size_t>(pairs) * kIlRows * 4);
    for (int r = 0; r < kIlRows && g * kIlRows + r < rows; ++r) {
      const uint8_t* row = w + static_cast<size_t>(g * kIlRows + r) * row_bytes;
      if (kind == kWBF16) {
        std::memcpy(row_pairs.data(), row, static_cast<size_t>(pairs) * 4);  // already bf16
      } else {
        for (int64_t i = 0; i < cols; ++i) {
          uint16_t h;
          std::memcpy(&h, row + 2 * i, 2);
          row_f32[i] = F16ToF32(h);
        }
        RoundToBf16Pairs(row_f32.data(), cols, row_pairs.data());
      }
      for (int64_t p = 0; p < pairs; ++p) o[p * kIlRows + r] = row_pairs[p];
    }
  }
}

}  // namespace

void InterleaveGroups(WeightKind kind, const uint8_t* w, size_t row_bytes, int64_t rows,
                      int64_t cols, int64_t g0, int64_t g1, uint8_t* out, bool bf16_pairs) {
  const int64_t blocks = cols / 32;
  const size_t rec = IlRecordBytes(kind);
  if (IsIlFloatKind(kind) && bf16_pairs) {
    return InterleaveBf16Pairs(kind, w, row_bytes, rows, cols, g0, g1, out);
  }
  if (IsIlFloatKind(kind)) {  // 2-byte values: a row piece is the row's 64 bytes at 64 * b
    for (int64_t g = g0; g < g1; ++g) {
      uint8_t* o = out + static_cast<size_t>(g * blocks) * rec;
      std::memset(o, 0, static_cast<size_t>(blocks) * rec);
      for (int r = 0; r < kIlRows && g * kIlRows + r < rows; ++r) {
        const uint8_t* row = w + static_cast<size_t>(g * kIlRows + r) * row_bytes;
        for (int64_t b = 0; b < blocks; ++b) std::memcpy(o + b * rec + 64 * r, row + 64 * b, 64);
      }
    }
    return;
  }
  const size_t bb = IntBlockBytes(kind);
  const size_t head = IlHeaderBytes(kind);
  const size_t qs = kind == kWQ4_1 ? 4 : 2;  // GGUF block: d (and Q4_1's m), then the values
  const int chunks = IlChunks(kind);
  for (int64_t g = g0; g < g1; ++g) {
    uint8_t* o = out + static_cast<size_t>(g * blocks) * rec;
    std::memset(o, 0, static_cast<size_t>(blocks) * rec);  // padding rows: zero scale, u = 0
    for (int r = 0; r < kIlRows && g * kIlRows + r < rows; ++r) {
      const uint8_t* row = w + static_cast<size_t>(g * kIlRows + r) * row_bytes;
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* blk = row + b * bb;
        uint8_t* ob = o + b * rec;
        std::memcpy(ob + 2 * r, blk, 2);
        if (kind == kWQ4_1) std::memcpy(ob + 32 + 2 * r, blk + 2, 2);
        for (int j = 0; j < chunks; ++j) {
          uint8_t* dst = ob + head + 64 * j + 4 * r;
          for (int i = 0; i < 4; ++i) {
            const uint8_t q = blk[qs + 4 * j + i];
            dst[i] = kind == kWQ8_0 ? static_cast<uint8_t>(q ^ 0x80) : q;
          }
        }
      }
    }
  }
}

IlDotFn IlDotFor(Isa isa, WeightKind kind) {
  if (isa == Isa::kAvx512 && Avx512VnniIlDot(kind) != nullptr) return Avx512VnniIlDot(kind);
  // AVX-512 without VNNI (Skylake-SP) runs the AVX2 kernel: same layout, same results.
  return isa == Isa::kAvx2 || isa == Isa::kAvx512 ? Avx2IlDot(kind) : nullptr;
}

FloatIlDotFn FloatIlDotFor(Isa isa, WeightKind kind) {
  if (isa == Isa::kAvx512) return Avx512FloatIlDot(kind);
  return isa == Isa::kAvx2 ? Avx2FloatIlDot(kind) : nullptr;
}

bool HasIlLayout(Isa isa, WeightKind kind) {
  return IlDotFor(isa, kind) != nullptr || FloatIlDotFor(isa, kind) != nullptr;
}

void FloatIlDotPortable(WeightKind kind, const uint8_t* il, int64_t rows, int64_t blocks,
                        int64_t g0, int64_t g1, const float* x, int64_t x_stride, int num_tokens,
                        float* y, int64_t y_stride) {
  for (int64_t r = g0 * kIlRows; r < std::min(rows, g1 * kIlRows); ++r) {
    for (int t = 0; t < num_tokens; ++t) {
      const float* xt = x + t * x_stride;
      float acc = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* piece = IlFloatPiece(il, blocks, r, b);
        for (int i = 0; i < 32; ++i) {
          uint16_t h;
          std::memcpy(&h, piece + 2 * i, 2);
          acc += (kind == kWF16 ? F16ToF32(h) : Bf16ToF32(h)) * xt[32 * b + i];
        }
      }
      y[t * y_stride + r] = acc;
    }
  }
}

void IlDotPortable(WeightKind kind, const uint8_t* il, int64_t rows, int64_t g0, int64_t g1,
                   const QuantizedActs& a, int64_t t0, int num_tokens, float* y, int64_t y_stride) {
  const int64_t blocks = a.cols / 32;
  const size_t rec = IlRecordBytes(kind);
  const int z = IntZeroPoint(kind);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* base = il + static_cast<size_t>(g * blocks) * rec;
    for (int t = 0; t < num_tokens; ++t) {
      const int8_t* q = a.Qs(t0 + t);
      const float* da = a.D(t0 + t);
      const int32_t* sa = a.Sum(t0 + t);
      float acc[kIlRows] = {};
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* o = base + b * rec;
        const int8_t* qb = q + b * 32;
        for (int r = 0; r < kIlRows; ++r) {
          int32_t s = -z * sa[b];
          for (int j = 0; j < IlChunks(kind); ++j) {
            const uint8_t* u = o + IlHeaderBytes(kind) + 64 * j + 4 * r;
            for (int i = 0; i < 4; ++i) {
              if (kind != kWQ8_0) {
                s += (u[i] & 0x0f) * qb[4 * j + i] + (u[i] >> 4) * qb[16 + 4 * j + i];
              } else {
                s += u[i] * qb[4 * j + i];
              }
            }
          }
          uint16_t h;
          std::memcpy(&h, o + 2 * r, 2);
          acc[r] += static_cast<float>(s) * (F16ToF32(h) * da[b]);
          if (kind == kWQ4_1) {  // the minimum times the activations' block sum
            std::memcpy(&h, o + 32 + 2 * r, 2);
            acc[r] += F16ToF32(h) * (da[b] * static_cast<float>(sa[b]));
          }
        }
      }
      for (int r = 0; r < kIlRows && g * kIlRows + r < rows; ++r) {
        y[t * y_stride + g * kIlRows + r] = acc[r];
      }
    }
  }
}

void PackIntPanelFromIl(WeightKind kind, const uint8_t* il, int64_t blocks, int64_t r0,
                        int valid_rows, int64_t b0, int64_t nblocks, uint8_t* panel) {
  const size_t rec = IlRecordBytes(kind);
  const int64_t g_first = r0 / kIlRows;
  const int halves = valid_rows > kIlRows ? 2 : 1;  // groups of 16 rows that exist
  for (int64_t b = 0; b < nblocks; ++b) {
    uint8_t* pb = panel + b * kIntPanelBlockBytes;
    auto* dw = reinterpret_cast<float*>(pb + 8 * kIntNr * 4);
    float* m = dw + kIntNr;
    for (int h = 0; h < 2; ++h) {
      uint8_t* half = pb + h * kIlRows * 4;  // rows 16h .. 16h + 15 of every 4-element group
      if (h >= halves) {
        for (int grp = 0; grp < 8; ++grp) std::memset(half + grp * kIntNr * 4, 0, kIlRows * 4);
        for (int r = 0; r < kIlRows; ++r) dw[h * kIlRows + r] = m[h * kIlRows + r] = 0.0f;
        continue;
      }
      const uint8_t* o = il + static_cast<size_t>((g_first + h) * blocks + b0 + b) * rec;
      for (int r = 0; r < kIlRows; ++r) {
        uint16_t s;
        std::memcpy(&s, o + 2 * r, 2);
        dw[h * kIlRows + r] = F16ToF32(s);
        if (kind == kWQ4_1) std::memcpy(&s, o + 32 + 2 * r, 2);
        m[h * kIlRows + r] = kind == kWQ4_1 ? F16ToF32(s) : 0.0f;
      }
      if (kind == kWQ8_0) {
        for (int grp = 0; grp < 8; ++grp) {
          std::memcpy(half + grp * kIntNr * 4, o + 32 + 64 * grp, kIlRows * 4);
        }
      } else {
        for (int j = 0; j < 4; ++j) {
          const uint8_t* c = o + IlHeaderBytes(kind) + 64 * j;
          uint8_t* lo = half + j * kIntNr * 4;
          uint8_t* hi = half + (4 + j) * kIntNr * 4;
          for (int i = 0; i < kIlRows * 4; ++i) {
            lo[i] = c[i] & 0x0f;
            hi[i] = c[i] >> 4;
          }
        }
      }
    }
  }
}

}  // namespace jisu::matmul_internal
