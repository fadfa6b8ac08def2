#include "ops/half_row.h"

#include "core/half.h"
#include "ops/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace jisu {
namespace half_row_internal {

void F32ToF16RowPortable(const float* x, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = F32ToF16(x[i]);
}

#if defined(__x86_64__)
namespace {

__attribute__((target("avx2,f16c"))) void F32ToF16RowImpl(const float* x, uint16_t* out,
                                                          int64_t n) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), kRound));
  }
  for (; i < n; ++i) {
    out[i] = static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(x[i]), kRound), 0));
  }
}

}  // namespace

bool F32ToF16RowF16c(const float* x, uint16_t* out, int64_t n) {
  static const bool ok = GetCpuFeatures().avx2;  // includes F16C
  if (!ok) return false;
  F32ToF16RowImpl(x, out, n);
  return true;
}
#else
bool F32ToF16RowF16c(const float*, uint16_t*, int64_t) { return false; }
#endif

}  // namespace half_row_internal

void F32ToF16Row(const float* x, uint16_t* out, int64_t n) {
  if (half_row_internal::F32ToF16RowF16c(x, out, n)) return;
  half_row_internal::F32ToF16RowPortable(x, out, n);
}

}  // namespace jisu
