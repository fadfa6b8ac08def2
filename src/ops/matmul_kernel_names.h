// Names of the MatMul kernels this machine runs, per weight type, for `jisu info --system` and
// benchmark records. New kernel kinds (integer dot products on quantized activations, repacked
// layouts, K-quants) add their rows or fields here, next to the dispatch they describe.
#pragma once

#include <string>
#include <vector>

namespace jisu {

struct MatMulKernelName {
  std::string weight_type;  // "q4_0"
  std::string decode;       // kernel for few tokens (matrix-vector)
  std::string prefill;      // kernel for many tokens (tiled matrix-matrix)
};

std::vector<MatMulKernelName> ListMatMulKernels();

}  // namespace jisu
