// An owning device allocation (cudaMalloc), and JISU_CUDA_RETURN to turn CUDA runtime errors
// into Status. Resize discards the contents; it reallocates only when the size changes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "jisu/status.h"

#define JISU_CUDA_RETURN(expr)                                               \
  do {                                                                       \
    const cudaError_t jisu_cuda_err_ = (expr);                               \
    if (jisu_cuda_err_ != cudaSuccess) {                                     \
      return ::jisu::Status::Internal(std::string("CUDA: ") + #expr + ": " + \
                                      cudaGetErrorString(jisu_cuda_err_));   \
    }                                                                        \
  } while (0)

namespace jisu {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), size_(o.size_) {
    o.ptr_ = nullptr;
    o.size_ = 0;
  }
  ~DeviceBuffer() { Reset(); }

  Status Resize(uint64_t bytes) {
    if (bytes == size_) return Status::Ok();
    Reset();
    if (bytes == 0) return Status::Ok();
    const cudaError_t err = cudaMalloc(&ptr_, bytes);
    if (err != cudaSuccess) {
      cudaGetLastError();
      ptr_ = nullptr;
      return Status::ResourceExhausted("CUDA: cannot allocate " + std::to_string(bytes >> 20) +
                                       " MiB of device memory: " + cudaGetErrorString(err));
    }
    size_ = bytes;
    return Status::Ok();
  }
  void Reset() {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    size_ = 0;
  }

  void* get() const { return ptr_; }
  uint64_t size() const { return size_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace jisu
