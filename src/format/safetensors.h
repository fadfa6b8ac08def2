// Safetensors reading: one file (SafetensorsFile) or a Hugging Face model folder
// (SafetensorsModel: model.safetensors, or shards listed in model.safetensors.index.json).
// Tensor data stays in the memory mappings. The JSON header and every offset are validated:
// offsets inside the file, sizes matching dtype x shape, no overlaps, header size bounded.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "jisu/status.h"

namespace jisu {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;   // F32, F16, BF16, F64, I8..I64 map to DType; others rejected
  std::vector<int64_t> shape;  // outermost first
  const uint8_t* data = nullptr;
  uint64_t num_bytes = 0;
  int64_t NumElements() const;
};

class SafetensorsFile {
 public:
  static Result<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  // Parses a buffer the caller keeps alive (fuzzing, tests).
  static Result<std::unique_ptr<SafetensorsFile>> Parse(const uint8_t* data, size_t size,
                                                        std::string name = "<memory>");

  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* Find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  std::unique_ptr<MappedFile> file_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

// All tensors of a model folder, across shards.
class SafetensorsModel {
 public:
  static Result<std::unique_ptr<SafetensorsModel>> OpenDir(const std::string& dir);
  const SafetensorsTensor* Find(std::string_view name) const;
  std::vector<std::string> TensorNames() const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, const SafetensorsTensor*, std::less<>> index_;
};

}  // namespace jisu
