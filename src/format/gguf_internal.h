// Helpers shared by the GGUF reader and writer (not part of the public contract): value-type
// classification.
#pragma once

#include <cstdint>
#include <string_view>

#include "format/gguf.h"
#include "format/text_util.h"

namespace jisu {

inline bool IsValidGgufType(uint32_t raw) { return raw <= static_cast<uint32_t>(GgufType::kF64); }

inline bool IsUnsignedGgufType(GgufType t) {
  return t == GgufType::kU8 || t == GgufType::kU16 || t == GgufType::kU32 || t == GgufType::kU64;
}

inline bool IsIntegerGgufType(GgufType t) {
  return IsUnsignedGgufType(t) || t == GgufType::kI8 || t == GgufType::kI16 ||
         t == GgufType::kI32 || t == GgufType::kI64;
}

}  // namespace jisu
