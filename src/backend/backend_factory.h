// Policy for choosing where a model runs and how much memory its KV pool gets: parses the
// user's `--device` and `--kv-memory`, asks the device how much memory is free, and builds the
// ForwardBackend (CPU, or CUDA when built with it and a GPU is present). The engine never sees
// devices or budgets, only the backend and its block count.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/forward_backend.h"
#include "jisu/request_options.h"
#include "jisu/status.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace jisu {

// A KV budget: an absolute size ("512MiB", "2GiB", "1.5GB") or a fraction of the memory free
// after the weights are placed ("0.9").
struct KvMemory {
  uint64_t bytes = 0;   // > 0 for an absolute size
  double fraction = 0;  // in (0, 1] otherwise
  static Result<KvMemory> Parse(const std::string& text);
  std::string ToString() const;
};

// Free host memory (MemAvailable from /proc/meminfo; 0 where unknown).
uint64_t HostAvailableMemory();

enum class DeviceKind { kAuto, kCpu, kCuda };
Result<DeviceKind> ParseDevice(const std::string& text);  // "auto", "cpu", "cuda", "cuda:N"

struct BackendOptions {
  std::string device = "auto";  // auto: CUDA when built with it and a GPU is present, else CPU
  KvMemory kv_memory{0, 0.5};
  int64_t block_size = 16;
  int num_threads = 0;        // CPU threads, 0 = all
  int64_t max_kv_blocks = 0;  // cap (0 = none), so a fraction of a large machine stays sane
  // Element type of the CPU backend's KV cache; the CUDA backend keeps its own device format.
  KvType kv_type = kDefaultKvType;
  // CPU: repack weights at load into the kernels' faster layouts (CpuWeightsOptions), laid out
  // for this matmul path (the engine's default: requests on another path read the file's).
  bool interleave = true;
  MatmulPath matmul = MatmulPath::kAuto;
  // CUDA measurement switches (CudaBackendOptions).
  bool reference_sampler = false;
  bool gemv_pdl = true;
};

// Whether this build has the CUDA backend and a usable GPU; `why` says why not.
bool CudaBackendAvailable(std::string* why);

Result<std::unique_ptr<ForwardBackend>> CreateBackend(const Model& model,
                                                      const BackendOptions& options);

}  // namespace jisu
