// A read-only memory mapping of a whole file. Model weights are used in place from the
// mapping (no copy) whenever their layout allows; the mapping lives as long as this object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "jisu/status.h"

namespace jisu {

class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Reads a whole (small) text file such as config.json. Refuses files over `max_bytes`.
Result<std::string> ReadTextFile(const std::string& path, size_t max_bytes = 256u << 20);

}  // namespace jisu
