// AArch64 integer kernels on SDOT (the Armv8.2-A dot-product extension): the kernels of
// matmul_int_neon.h with one vdotq a group of four products. The file is built for the
// extension (the pragma below); it runs only where CpuFeatures::neon_dotprod holds
// (IntKernelsFor(Isa::kNeonDotprod), which IsaAvailable guards).
#include "ops/matmul_int.h"

#if defined(__aarch64__)
// Every header with code shared by other files comes before the pragma, so their inline
// functions are compiled for the baseline here too (the linker keeps one copy of each).
#include <arm_neon.h>

#include "core/half.h"
#include "ops/matmul_int_kquant.h"
#include "ops/simd_neon.h"

#pragma GCC target("arch=armv8.2-a+dotprod")

#include "ops/matmul_int_neon.h"

namespace jisu::matmul_internal {
namespace {

struct SdotDot {
  static inline int32x4_t Dot(int32x4_t acc, int8x16_t w, int8x16_t a) {
    return vdotq_s32(acc, w, a);
  }
  template <int G>
  static inline int32x4_t DotLane(int32x4_t acc, int8x16_t w, int8x16_t a) {
    return vdotq_laneq_s32(acc, w, a, G);
  }
};

constexpr IntKernelSet kNeonDotprodInt = MakeNeonIntKernelSet<SdotDot>("neon-dotprod-int8");

}  // namespace

const IntKernelSet* NeonDotprodIntKernels() { return &kNeonDotprodInt; }

}  // namespace jisu::matmul_internal

#else

namespace jisu::matmul_internal {
const IntKernelSet* NeonDotprodIntKernels() { return nullptr; }
}  // namespace jisu::matmul_internal

#endif
