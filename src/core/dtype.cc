#include "core/dtype.h"

#include <array>
#include <cassert>
#include <limits>

namespace jisu {
namespace {

// clang-format off
constexpr std::array<DTypeTraits, 20> kTraits = {{
    {DType::kF32, "f32", 1, 4},
    {DType::kF16, "f16", 1, 2},
    {DType::kQ4_0, "q4_0", 32, 18},
    {DType::kQ4_1, "q4_1", 32, 20},
    {DType::kQ5_0, "q5_0", 32, 22},
    {DType::kQ5_1, "q5_1", 32, 24},
    {DType::kQ8_0, "q8_0", 32, 34},
    {DType::kQ8_1, "q8_1", 32, 36},
    {DType::kQ2_K, "q2_k", 256, 84},
    {DType::kQ3_K, "q3_k", 256, 110},
    {DType::kQ4_K, "q4_k", 256, 144},
    {DType::kQ5_K, "q5_k", 256, 176},
    {DType::kQ6_K, "q6_k", 256, 210},
    {DType::kQ8_K, "q8_k", 256, 292},
    {DType::kI8, "i8", 1, 1},
    {DType::kI16, "i16", 1, 2},
    {DType::kI32, "i32", 1, 4},
    {DType::kI64, "i64", 1, 8},
    {DType::kF64, "f64", 1, 8},
    {DType::kBF16, "bf16", 1, 2},
}};
// clang-format on

}  // namespace

std::optional<DTypeTraits> GetDTypeTraits(uint32_t raw_type) {
  for (const auto& t : kTraits) {
    if (static_cast<uint32_t>(t.dtype) == raw_type) return t;
  }
  return std::nullopt;
}

const DTypeTraits& Traits(DType dtype) {
  for (const auto& t : kTraits) {
    if (t.dtype == dtype) return t;
  }
  assert(false && "unknown dtype");
  return kTraits[0];
}

std::optional<DType> DTypeFromName(std::string_view name) {
  for (const auto& t : kTraits) {
    if (t.name == name) return t.dtype;
  }
  return std::nullopt;
}

std::optional<uint64_t> RowBytes(DType dtype, uint64_t num_elements) {
  const DTypeTraits& t = Traits(dtype);
  const uint64_t block = static_cast<uint64_t>(t.block_size);
  if (num_elements % block != 0) return std::nullopt;
  const uint64_t num_blocks = num_elements / block;
  if (num_blocks > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(t.block_bytes)) {
    return std::nullopt;
  }
  return num_blocks * static_cast<uint64_t>(t.block_bytes);
}

uint32_t GgufFileType(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return 1;
    case DType::kQ4_0:
      return 2;
    case DType::kQ4_1:
      return 3;
    case DType::kQ8_0:
      return 7;
    case DType::kQ2_K:
      return 10;
    case DType::kQ3_K:
      return 11;
    case DType::kQ4_K:
      return 14;
    case DType::kQ5_K:
      return 16;
    case DType::kQ6_K:
      return 18;
    case DType::kBF16:
      return 32;
    default:
      return 0;
  }
}

}  // namespace jisu
