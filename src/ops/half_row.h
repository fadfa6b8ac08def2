// Rows of float32 to IEEE half, round-to-nearest-even (what core/half.h's F32ToF16 does one
// value at a time): the KV cache's write path when it stores F16.
#pragma once

#include <cstdint>

namespace jisu {

void F32ToF16Row(const float* x, uint16_t* out, int64_t n);

namespace half_row_internal {
// F16C (vcvtps2ph); false where unavailable. Bit-identical to the portable loop except for
// NaN payloads (both give a quiet NaN of the same sign).
bool F32ToF16RowF16c(const float* x, uint16_t* out, int64_t n);
void F32ToF16RowPortable(const float* x, uint16_t* out, int64_t n);
}  // namespace half_row_internal

}  // namespace jisu
