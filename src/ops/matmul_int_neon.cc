// AArch64 integer kernels for every NEON CPU (Armv8.0-A): int8 products widened to int16
// (matmul_int_neon.h), for CPUs without the dot-product extension (Cortex-A53/A72, ...).
#include "ops/matmul_int.h"

#if defined(__aarch64__)
#include "ops/matmul_int_neon.h"

namespace jisu::matmul_internal {
namespace {
constexpr IntKernelSet kNeonInt = MakeNeonIntKernelSet<WideningDot>("neon-int8");
}  // namespace

const IntKernelSet* NeonIntKernels() { return &kNeonInt; }

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
const IntKernelSet* NeonIntKernels() { return nullptr; }
}  // namespace jisu::matmul_internal

#endif
