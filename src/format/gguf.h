// GGUF (v2/v3) reading. Owns the parsed metadata and tensor directory of one file; tensor data
// stays in the memory mapping and is handed out as pointers into it. Every offset, count and
// size from the file is validated before use: a corrupt file gives a Status naming the
// problem, never a crash or an allocation sized by an unchecked number.
// Tensor shapes are given outermost-first (PyTorch order: [rows, cols] for a matrix), i.e.
// GGUF's ne[] reversed, so callers see the same shapes from GGUF and safetensors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "jisu/status.h"

namespace jisu {

enum class GgufType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// "u8", "string", "array", ... (for messages and metadata dumps).
std::string_view GgufTypeName(GgufType type);

// One metadata value. Scalars are widened into i64/u64/f64; arrays hold their elements.
struct GgufValue {
  GgufType type = GgufType::kU8;
  GgufType array_type = GgufType::kU8;  // element type when type == kArray
  int64_t i = 0;                        // signed ints and bool
  uint64_t u = 0;                       // unsigned ints
  double f = 0;                         // floats
  std::string s;                        // strings
  std::vector<GgufValue> array;         // arrays (nested arrays allowed)

  bool IsInteger() const;                 // any integer type (not bool)
  std::optional<int64_t> AsInt() const;   // any integer type that fits in int64
  std::optional<double> AsFloat() const;  // any numeric type
};

struct GgufTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // outermost first
  uint64_t offset = 0;         // from the start of the file
  uint64_t num_bytes = 0;
  const uint8_t* data = nullptr;  // into the mapping (nullptr for FromMemory without data)
  int64_t NumElements() const;
};

class GgufFile {
 public:
  static Result<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses a buffer the caller keeps alive (fuzzing, tests). Same validation as Open.
  static Result<std::unique_ptr<GgufFile>> Parse(const uint8_t* data, size_t size,
                                                 std::string name = "<memory>");

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::string& name() const { return name_; }

  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const GgufValue* Find(std::string_view key) const;

  // Typed getters: NotFound if absent, InvalidArgument/Corrupt naming the key if the type
  // does not fit (integers of any width convert if the value fits).
  Result<std::string> GetString(std::string_view key) const;
  Result<int64_t> GetInt(std::string_view key) const;
  Result<double> GetFloat(std::string_view key) const;
  Result<bool> GetBool(std::string_view key) const;
  Result<std::vector<std::string>> GetStringArray(std::string_view key) const;
  Result<std::vector<int64_t>> GetIntArray(std::string_view key) const;
  Result<std::vector<float>> GetFloatArray(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(std::string_view name) const;

 private:
  GgufFile() = default;
  std::unique_ptr<MappedFile> file_;  // null for Parse()
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace jisu
