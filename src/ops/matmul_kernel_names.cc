#include "ops/matmul_kernel_names.h"

#include "ops/matmul_kernels.h"

namespace jisu {

std::vector<MatMulKernelName> ListMatMulKernels() {
  using namespace matmul_internal;
  const KernelSet& ks = ActiveKernelSet();
  const std::string isa = IsaName(ks.isa);
  const std::string tile = std::to_string(ks.mr) + "x" + std::to_string(ks.nr);
  static const char* const kNames[kNumWeightKinds] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1"};
  std::vector<MatMulKernelName> out;
  for (int k = 0; k < kNumWeightKinds; ++k) {
    const std::string t = kNames[k];
    // Both paths keep float32 activations and expand the weights to float in registers.
    out.push_back({t, isa + " dot " + t + " x f32",
                   isa + " gemm " + tile + " f32 (" + t + " dequantized into panels)"});
  }
  return out;
}

}  // namespace jisu
