#include "ops/matmul_kernel_names.h"

#include "ops/matmul_int.h"
#include "ops/matmul_kernels.h"

namespace jisu {

std::vector<MatMulKernelName> ListMatMulKernels() {
  using namespace matmul_internal;
  const KernelSet& ks = ActiveKernelSet();
  const std::string isa = IsaName(ks.isa);
  const std::string tile = std::to_string(ks.mr) + "x" + std::to_string(ks.nr);
  static const char* const kNames[kNumWeightKinds] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1"};
  const IntKernelSet& iks = IntKernelsFor(ks.isa);
  std::vector<MatMulKernelName> out;
  for (int k = 0; k < kNumWeightKinds; ++k) {
    const std::string t = kNames[k];
    const auto kind = static_cast<WeightKind>(k);
    if (IsIntKind(kind) && UseIntPath() && iks.dot[k] != nullptr) {
      // Activations quantized to int8 blocks of 32 once per matmul; integer block dots.
      const std::string dot = std::string(iks.name) + " dot " + t + " x q8";
      out.push_back({t, dot,
                     iks.gemm[k] != nullptr
                         ? std::string(iks.name) + " gemm " + std::to_string(iks.mr) + "x" +
                               std::to_string(kIntNr) + " " + t + " x q8 (packed u8 panels)"
                         : dot + " (token groups of 4)"});
      continue;
    }
    // Float activations, weights expanded to float in registers.
    out.push_back({t, isa + " dot " + t + " x f32",
                   isa + " gemm " + tile + " f32 (" + t + " dequantized into panels)"});
  }
  return out;
}

}  // namespace jisu
