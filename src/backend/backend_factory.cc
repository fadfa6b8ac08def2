#include "backend/backend_factory.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "backend/cpu/cpu_backend.h"
#ifdef JISU_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace jisu {

Result<KvMemory> KvMemory::Parse(const std::string& text) {
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (...) {
    return Status::InvalidArgument("--kv-memory: not a size or fraction: '" + text + "'");
  }
  const std::string unit = text.substr(pos);
  if (!std::isfinite(value) || value <= 0) {
    return Status::InvalidArgument("--kv-memory: must be positive: '" + text + "'");
  }
  if (unit.empty() && value <= 1.0) return KvMemory{0, value};
  double scale = 0;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "KiB") {
    scale = 1024.0;
  } else if (unit == "MiB") {
    scale = 1024.0 * 1024;
  } else if (unit == "GiB") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "TiB") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else if (unit == "KB") {
    scale = 1e3;
  } else if (unit == "MB") {
    scale = 1e6;
  } else if (unit == "GB") {
    scale = 1e9;
  } else {
    return Status::InvalidArgument(
        "--kv-memory: unit must be B, KiB, MiB, GiB, TiB, KB, MB or "
        "GB, or give a fraction in (0, 1]: '" +
        text + "'");
  }
  const double bytes = value * scale;
  if (bytes < 1 || bytes > 1e15) return Status::InvalidArgument("--kv-memory: out of range");
  return KvMemory{static_cast<uint64_t>(bytes), 0};
}

std::string KvMemory::ToString() const {
  char buf[64];
  if (bytes > 0) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.0f%% of free memory", fraction * 100);
  }
  return buf;
}

uint64_t HostAvailableMemory() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream fields(line.substr(13));
      uint64_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

Result<DeviceKind> ParseDevice(const std::string& text) {
  if (text == "auto") return DeviceKind::kAuto;
  if (text == "cpu") return DeviceKind::kCpu;
  if (text == "cuda") return DeviceKind::kCuda;
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 &&
      text.find_first_not_of("0123456789", 5) == std::string::npos && text.size() < 9) {
    return DeviceKind::kCuda;
  }
  return Status::InvalidArgument("--device: expected auto, cpu, cuda or cuda:N, got '" + text +
                                 "'");
}

namespace {

[[maybe_unused]] int DeviceIndex(const std::string& text) {
  return text.rfind("cuda:", 0) == 0 ? std::stoi(text.substr(5)) : 0;
}

Result<int64_t> BlocksFor(const KvMemory& kv, uint64_t free_bytes, uint64_t bytes_per_block,
                          int64_t cap) {
  uint64_t budget = kv.bytes;
  if (budget == 0) {
    if (free_bytes == 0) {
      return Status::InvalidArgument("--kv-memory: free memory is unknown here; give a size");
    }
    budget = static_cast<uint64_t>(kv.fraction * static_cast<double>(free_bytes));
  }
  int64_t blocks = static_cast<int64_t>(budget / bytes_per_block);
  if (cap > 0 && blocks > cap) blocks = cap;
  if (blocks < 1) {
    return Status::InvalidArgument("--kv-memory: " + kv.ToString() + " holds no KV block (" +
                                   std::to_string(bytes_per_block) + " bytes each)");
  }
  return blocks;
}

}  // namespace

bool CudaBackendAvailable(std::string* why) {
#ifdef JISU_HAVE_CUDA
  return CudaDeviceAvailable(why);
#else
  if (why) *why = "this build has no CUDA backend (configure with -DJISU_CUDA=ON)";
  return false;
#endif
}

Result<std::unique_ptr<ForwardBackend>> CreateBackend(const Model& model,
                                                      const BackendOptions& options) {
  JISU_ASSIGN_OR_RETURN(DeviceKind kind, ParseDevice(options.device));
  if (!model.has_weights()) return Status::InvalidArgument("backend: the model has no weights");
  std::string why;
  if (kind == DeviceKind::kAuto) {
    kind = CudaBackendAvailable(&why) ? DeviceKind::kCuda : DeviceKind::kCpu;
  } else if (kind == DeviceKind::kCuda && !CudaBackendAvailable(&why)) {
    return Status::InvalidArgument("--device cuda: " + why);
  }
  if (kind == DeviceKind::kCuda) {
#ifdef JISU_HAVE_CUDA
    CudaBackendOptions cuda;
    cuda.device = DeviceIndex(options.device);
    cuda.block_size = options.block_size;
    cuda.kv_bytes = options.kv_memory.bytes;
    cuda.kv_fraction = options.kv_memory.fraction;
    cuda.max_kv_blocks = options.max_kv_blocks;
    cuda.reference_sampler = options.reference_sampler;
    cuda.gemv_pdl = options.gemv_pdl;
    return CreateCudaBackend(model, cuda);
#endif
  }
  // The CPU backend's weights are already in (mapped) host memory, so what is available now
  // is what the KV pool may take.
  const uint64_t per_block =
      CpuBackend::BytesPerBlock(model.config(), options.block_size, options.kv_type);
  JISU_ASSIGN_OR_RETURN(int64_t blocks, BlocksFor(options.kv_memory, HostAvailableMemory(),
                                                  per_block, options.max_kv_blocks));
  CpuBackendOptions cpu{blocks, options.block_size, options.num_threads, options.kv_type,
                        CpuWeightsOptions{options.interleave, options.matmul}};
  JISU_ASSIGN_OR_RETURN(auto backend, CpuBackend::Create(model, cpu));
  return std::unique_ptr<ForwardBackend>(std::move(backend));
}

}  // namespace jisu
