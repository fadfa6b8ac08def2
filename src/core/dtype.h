// Element types of weights and activations. The numeric values are GGUF's (ggml_type) so a
// GGUF tensor's type converts by a checked cast; safetensors dtypes map onto the same enum.
// Block-quantized types store `BlockSize()` elements in `BlockBytes()` bytes (GGUF layouts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace jisu {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
};

struct DTypeTraits {
  DType dtype;
  std::string_view name;  // lower case, as in GGUF tooling: "f32", "q4_0", ...
  int64_t block_size;     // elements per block (1 for plain types)
  int64_t block_bytes;    // bytes per block
};

// Traits for a known type; nullopt for a GGUF type id we do not know.
std::optional<DTypeTraits> GetDTypeTraits(uint32_t raw_type);
const DTypeTraits& Traits(DType dtype);  // dtype must be known

inline std::string_view DTypeName(DType d) { return Traits(d).name; }
std::optional<DType> DTypeFromName(std::string_view name);

// Bytes of a row of `num_elements`; nullopt if num_elements is not a multiple of the block
// size or the size overflows.
std::optional<uint64_t> RowBytes(DType dtype, uint64_t num_elements);

// llama.cpp's general.file_type for a file whose matrices are mostly `dtype` (K-quants: the
// uniform "_S" variants); 0 (all F32) for types without a code.
uint32_t GgufFileType(DType dtype);

}  // namespace jisu
