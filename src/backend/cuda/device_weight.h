// A weight matrix on the GPU in its storage type. Every kernel that reads weights takes a
// DeviceWeight and dispatches on `type` (CudaBackend::Gemm, the fused GEMVs, the embedding
// lookup), so a quantized type is added by its upload and its kernels, not by changing callers.
//
// Today every host type (F32/F16/BF16 and llama.cpp's block types) is stored as BF16: the fast
// path, exact for BF16 files. Issue 33's types (per-channel INT8 and FP8, group-wise INT4)
// plug in here: `scales` per group of `group_size` columns of a row (group_size == cols: per
// output channel).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/device_buffer.h"
#include "core/dtype.h"

namespace jisu {

struct DeviceWeight {
  DType type = DType::kBF16;
  int64_t rows = 0, cols = 0;
  DeviceBuffer data;    // kBF16: [rows, cols] bf16
  DeviceBuffer scales;  // per (row, group); empty for kBF16
  int64_t group_size = 0;

  bool empty() const { return data.size() == 0; }
  bool is_bf16() const { return type == DType::kBF16; }
  const uint16_t* bf16() const { return data.as<uint16_t>(); }

  // Sizes the storage of a rows x cols matrix of `storage` type; its contents are undefined.
  Status Allocate(DType storage, int64_t r, int64_t c) {
    if (storage != DType::kBF16) {
      return Status::Unsupported("cuda backend: no kernels for " + std::string(DTypeName(storage)) +
                                 " weights yet");
    }
    type = storage;
    rows = r;
    cols = c;
    group_size = 0;
    scales.Reset();
    return data.Resize(static_cast<uint64_t>(r) * c * 2);
  }
  void Reset() {
    data.Reset();
    scales.Reset();
    rows = cols = group_size = 0;
  }
};

// The device storage type of a matrix stacked from host weights of types `parts` (q/k/v and
// gate/up are one matrix each on the GPU): the one policy point where a quantized file, or a
// load-time quantization option, keeps its type on the GPU. Parts of different types (K-quant
// mixes) share the widest device type.
inline DType DeviceStorageType(const std::vector<DType>& /*parts*/) { return DType::kBF16; }

}  // namespace jisu
