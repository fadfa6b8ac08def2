// MatMul's kernel-set selection: the best instruction set this CPU and build support
// (AVX-512, AVX2, NEON with or without the dot product, else scalar), the test and benchmark
// overrides (ForceIsa, ForcePath), and the mapping from a tensor's dtype to the kernels'
// WeightKind.
#include <atomic>
#include <cassert>
#include <optional>

#include "ops/cpu_features.h"
#include "ops/matmul.h"
#include "ops/matmul_kernels.h"

namespace jisu {
namespace matmul_internal {
namespace {

std::atomic<const KernelSet*> g_forced_set{nullptr};
std::atomic<int> g_forced_path{-1};

const KernelSet& BestKernelSet() {
  static const KernelSet* best = [] {
    if (IsaAvailable(Isa::kAvx512)) return Avx512KernelSet();
    if (IsaAvailable(Isa::kAvx2)) return Avx2KernelSet();
    if (IsaAvailable(Isa::kNeonDotprod)) return NeonDotprodKernelSet();
    if (IsaAvailable(Isa::kNeon)) return NeonKernelSet();
    return &ScalarKernelSet();
  }();
  return *best;
}

}  // namespace

std::optional<WeightKind> WeightKindOf(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return kWF32;
    case DType::kF16:
      return kWF16;
    case DType::kBF16:
      return kWBF16;
    case DType::kQ8_0:
      return kWQ8_0;
    case DType::kQ4_0:
      return kWQ4_0;
    case DType::kQ4_1:
      return kWQ4_1;
    case DType::kQ4_K:
      return kWQ4_K;
    case DType::kQ5_K:
      return kWQ5_K;
    case DType::kQ6_K:
      return kWQ6_K;
    case DType::kQ2_K:
      return kWQ2_K;
    case DType::kQ3_K:
      return kWQ3_K;
    default:
      return std::nullopt;
  }
}

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kNeon:
      return "neon";
    case Isa::kNeonDotprod:
      return "neon-dotprod";
  }
  return "?";
}

bool IsaAvailable(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return true;
    case Isa::kAvx2:
      return Avx2KernelSet() != nullptr && GetCpuFeatures().avx2;
    case Isa::kAvx512:
      return Avx512KernelSet() != nullptr && GetCpuFeatures().avx512;
    case Isa::kNeon:
      return NeonKernelSet() != nullptr && GetCpuFeatures().neon;
    case Isa::kNeonDotprod:
      return NeonDotprodKernelSet() != nullptr && GetCpuFeatures().neon_dotprod;
  }
  return false;
}

const KernelSet& ActiveKernelSet() {
  const KernelSet* forced = g_forced_set.load(std::memory_order_relaxed);
  return forced != nullptr ? *forced : BestKernelSet();
}

void ForceIsa(std::optional<Isa> isa) {
  const KernelSet* set = nullptr;
  if (isa.has_value()) {
    assert(IsaAvailable(*isa));
    switch (*isa) {
      case Isa::kScalar:
        set = &ScalarKernelSet();
        break;
      case Isa::kAvx2:
        set = Avx2KernelSet();
        break;
      case Isa::kAvx512:
        set = Avx512KernelSet();
        break;
      case Isa::kNeon:
        set = NeonKernelSet();
        break;
      case Isa::kNeonDotprod:
        set = NeonDotprodKernelSet();
        break;
    }
  }
  g_forced_set.store(set, std::memory_order_relaxed);
}

void ForcePath(std::optional<Path> path) {
  g_forced_path.store(path.has_value() ? static_cast<int>(*path) : -1, std::memory_order_relaxed);
}

std::optional<Path> ForcedPath() {
  const int p = g_forced_path.load(std::memory_order_relaxed);
  if (p < 0) return std::nullopt;
  return static_cast<Path>(p);
}

}  // namespace matmul_internal

}  // namespace jisu
