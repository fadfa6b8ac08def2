// Activations quantized on the fly to 8-bit blocks of 32 (Q8_0-like: one float scale per 32
// values), for integer dot products against Q8_0/Q4_0/Q4_1 weights. Quantized once per MatMul
// input and read by every weight row, by every thread.
//
// Besides the int8 values each token carries, per block b: d[b] (scale) and sum[b] (sum of
// the 32 int8 values, for the weight zero point / Q4_1 minimum), and per group of 4 values
// (one int32 lane of a vpdpbusd / pmaddubs+pmaddwd result) dl = d of its block and
// sl = d * (sum of the 4 values), so vector kernels can apply scales lane-wise without shuffles.
#pragma once

#include <cstddef>
#include <cstdint>

namespace jisu {

struct QuantizedActs {
  int64_t cols = 0;  // multiple of 32
  int64_t num_tokens = 0;
  const int8_t* qs = nullptr;    // [num_tokens][cols]
  const float* d = nullptr;      // [num_tokens][cols / 32]
  const int32_t* sum = nullptr;  // [num_tokens][cols / 32]
  const float* dl = nullptr;     // [num_tokens][cols / 4]
  const float* sl = nullptr;     // [num_tokens][cols / 4]

  const int8_t* Qs(int64_t t) const { return qs + t * cols; }
  const float* D(int64_t t) const { return d + t * (cols / 32); }
  const int32_t* Sum(int64_t t) const { return sum + t * (cols / 32); }
  const float* Dl(int64_t t) const { return dl + t * (cols / 4); }
  const float* Sl(int64_t t) const { return sl + t * (cols / 4); }
};

// Owns the storage; grows only, so steady-state use never allocates.
class ActQuantBuffer {
 public:
  ActQuantBuffer() = default;
  ActQuantBuffer(const ActQuantBuffer&) = delete;
  ActQuantBuffer& operator=(const ActQuantBuffer&) = delete;
  ~ActQuantBuffer();

  // Sizes the storage for [num_tokens, cols] (cols a multiple of 32) and returns its view;
  // the contents are valid once QuantizeTokens has covered every token.
  QuantizedActs Prepare(int64_t num_tokens, int64_t cols);

  // Quantizes tokens [t0, t1) of x (row stride x_stride floats) into the prepared storage.
  // Per block: d = max|x| / 127, q = round-half-away(x / d) (q = 0 where d = 0). Disjoint
  // token ranges may run on different threads.
  void QuantizeTokens(const float* x, int64_t x_stride, int64_t t0, int64_t t1);

  // Both in one call (single thread).
  QuantizedActs Quantize(const float* x, int64_t x_stride, int64_t num_tokens, int64_t cols) {
    const QuantizedActs a = Prepare(num_tokens, cols);
    QuantizeTokens(x, x_stride, 0, num_tokens);
    return a;
  }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
  int64_t cols_ = 0;
  int8_t* qs_ = nullptr;
  float* d_ = nullptr;
  int32_t* sum_ = nullptr;
  float* dl_ = nullptr;
  float* sl_ = nullptr;
};

namespace act_quant_internal {

// The storage QuantizeTokens fills, as plain pointers (layout of QuantizedActs).
struct ActQuantRows {
  int64_t cols;
  int8_t* qs;
  float* d;
  int32_t* sum;
  float* dl;
  float* sl;
};
// Tokens [t0, t1) of x into `out`: the portable definition, and an AVX-512 version that gives
// bit-identical results (same float operations per element; integer sums are exact). The
// AVX-512 one returns false where it is not compiled in or the CPU lacks AVX-512.
void QuantizeRowsScalar(const float* x, int64_t x_stride, int64_t t0, int64_t t1,
                        const ActQuantRows& out);
bool QuantizeRowsAvx512(const float* x, int64_t x_stride, int64_t t0, int64_t t1,
                        const ActQuantRows& out);
// The same for AVX2 (false where not compiled in or the CPU lacks AVX2).
bool QuantizeRowsAvx2(const float* x, int64_t x_stride, int64_t t0, int64_t t1,
                      const ActQuantRows& out);
// The same for AArch64 NEON (false where not compiled in).
bool QuantizeRowsNeon(const float* x, int64_t x_stride, int64_t t0, int64_t t1,
                      const ActQuantRows& out);

}  // namespace act_quant_internal
}  // namespace jisu
