#include "ops/matmul_kernel_names.h"

#include <iterator>

#include "ops/matmul_bf16.h"
#include "ops/matmul_gemv.h"
#include "ops/matmul_int.h"
#include "ops/matmul_interleaved.h"
#include "ops/matmul_kernels.h"

namespace jisu {

std::vector<MatMulKernelName> ListMatMulKernels() {
  using namespace matmul_internal;
  const KernelSet& ks = ActiveKernelSet();
  const std::string isa = IsaName(ks.isa);
  const std::string tile = std::to_string(ks.mr) + "x" + std::to_string(ks.nr);
  // In WeightKind order; the size check makes a new kind without a name a compile error.
  static constexpr const char* kNames[] = {"f32",  "f16",  "bf16", "q8_0", "q4_0", "q4_1",
                                           "q4_k", "q5_k", "q6_k", "q2_k", "q3_k"};
  static_assert(std::size(kNames) == kNumWeightKinds);
  const IntKernelSet& iks = IntKernelsFor(ks.isa);
  std::vector<MatMulKernelName> out;
  for (int k = 0; k < kNumWeightKinds; ++k) {
    const std::string t = kNames[k];
    const auto kind = static_cast<WeightKind>(k);
    // Float activations, weights expanded to float in registers.
    MatMulKernelName n{t, isa + " dot " + t + " x f32",
                       isa + " gemm " + tile + " f32 (" + t + " dequantized into panels)"};
    if (FloatIlDotFor(ks.isa, kind) != nullptr) {
      n.decode = isa + " dot " + t + " x f32, 16-row interleaved (repacked at load)";
      n.prefill = isa + " gemm " + tile + " f32 (" + t +
                  " dequantized into panels from the interleaved copy)";
    }
    if (IsIlFloatKind(kind) && ks.isa == Isa::kAvx512 && UseBf16Numerics() &&
        Avx512Bf16Gemm() != nullptr) {
      const std::string pairs = kind == kWF16 ? "bf16 pairs repacked at load, f16 rounded)"
                                              : "bf16 pairs repacked at load)";
      n.decode = "avx512_bf16 dot " + t + " x bf16, 16-row groups (" + pairs;
      n.prefill = "avx512_bf16 gemm " + std::to_string(kBf16Mr) + "x" + std::to_string(kBf16Nr) +
                  " " + t + " x bf16 (" + pairs;
    }
    // Integer path: activations quantized to int8 blocks of 32 once per matmul.
    const std::string int_dot = std::string(iks.name) + " dot " + t + " x q8";
    if (IsIntKind(kind) && iks.dot[k] != nullptr) {
      if (UseIntPath(1)) n.decode = int_dot;
      const char* gemv_name = nullptr;
      if (UseIntGemv() && GemvFor(ks.isa, kind, &gemv_name) != nullptr) {
        n.decode = std::string(gemv_name) + " " + t + " x q8 (one token)";
      }
      const bool il = UseIntGemv() && IlDotFor(ks.isa, kind) != nullptr;
      if (il) {
        n.decode =
            std::string(Avx512VnniIlDot(kind) != nullptr && ks.isa == Isa::kAvx512 ? "avx512_vnni"
                                                                                   : "avx2-int8") +
            " " + t + " x q8, 16-row interleaved (repacked at load)";
      }
      if (il && iks.gemm[k] != nullptr) {
        n.prefill = std::string(iks.name) + " gemm " + std::to_string(iks.mr) + "x" +
                    std::to_string(kIntNr) + " " + t + " x q8 (u8 panels packed from the " +
                    "interleaved copy)";
      } else if (UseIntPath(512)) {
        n.prefill = iks.gemm[k] != nullptr
                        ? std::string(iks.name) + " gemm " + std::to_string(iks.mr) + "x" +
                              std::to_string(kIntNr) + " " + t + " x q8 (packed u8 panels)"
                        : int_dot + " (token groups of 4)";
      }
    }
    if (IsIntKQuantKind(kind) && iks.dot[k] != nullptr && UseIntKQuantPath(kind)) {
      n.decode = std::string(iks.kquant_name != nullptr ? iks.kquant_name : iks.name) + " dot " +
                 t + " x q8";
    }
    if (IsIntKQuantKind(kind) && iks.gemm[k] != nullptr && UseIntKQuantPath(kind)) {
      n.prefill =
          std::string(iks.name) + " gemm " + std::to_string(iks.mr) + "x" + std::to_string(kIntNr) +
          " " + t + " x q8 " +
          (kind == kWQ6_K ? "(packed s8 panels, a scale per 16)" : "(packed as q4_1 u8 panels)");
    }
    out.push_back(n);
  }
  return out;
}

}  // namespace jisu
