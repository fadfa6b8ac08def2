// Writes GGUF v3 files (used by `jisu convert` and by tests that build small files).
// Metadata keys keep insertion order; adding a key again replaces its value in place.
// Tensor data is aligned to general.alignment (32 unless that key is set) and each tensor's
// bytes are padded to the alignment, the same layout as the Python `gguf` writer. Everything
// added is validated by Write/Serialize (the Add* calls cannot fail): UTF-8 names, unique
// tensor names, array element types, shapes (1..4 dims of positive sizes, rows a multiple of
// the block size) and data sizes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "format/gguf.h"
#include "jisu/status.h"

namespace jisu {

class GgufWriter {
 public:
  void AddString(const std::string& key, const std::string& value);
  void AddU32(const std::string& key, uint32_t value);
  void AddI32(const std::string& key, int32_t value);
  void AddU64(const std::string& key, uint64_t value);
  void AddF32(const std::string& key, float value);
  void AddBool(const std::string& key, bool value);
  void AddStringArray(const std::string& key, const std::vector<std::string>& values);
  void AddI32Array(const std::string& key, const std::vector<int32_t>& values);
  void AddF32Array(const std::string& key, const std::vector<float>& values);
  // Any value (as read by GgufFile) — lets a converter copy metadata through.
  void AddValue(const std::string& key, const GgufValue& value);

  // `shape` outermost first (as everywhere in jisu); `data` must hold exactly the bytes of
  // that shape in `dtype` (checked by Write). The bytes are copied.
  void AddTensor(const std::string& name, DType dtype, std::vector<int64_t> shape,
                 std::vector<uint8_t> data);

  // A tensor whose bytes are produced while the file is written: `fill` receives a buffer of
  // exactly the shape's size in `dtype` and must fill all of it. Tensors are filled one at a
  // time, in order, into one reused buffer, so a multi-GB file never sits in memory.
  using TensorFill = std::function<Status(uint8_t* dst, uint64_t num_bytes)>;
  void AddTensorStreamed(const std::string& name, DType dtype, std::vector<int64_t> shape,
                         TensorFill fill);

  // Writes the file (to a temporary name, renamed on success).
  Status Write(const std::string& path) const;
  // Serializes to memory (tests, fuzz seeds).
  Result<std::vector<uint8_t>> Serialize() const;

 private:
  struct Tensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
    TensorFill fill;         // set for streamed tensors (then data is empty)
    uint64_t num_bytes = 0;  // of data, or what fill must produce
  };
  Status Validate(uint64_t* alignment) const;
  // Streams the file through `write`, which returns false on failure.
  template <typename WriteFn>
  Status Emit(uint64_t alignment, WriteFn&& write) const;

  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
};

}  // namespace jisu
