#include "ops/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "ops/matmul_int.h"
#include "ops/matmul_kernels.h"

namespace jisu {
namespace {

using matmul_internal::Isa;
using matmul_internal::IsaAvailable;

// What MatMul runs follows the detected features: on AArch64 NEON always, the SDOT kernels
// exactly where the CPU has them (scripts/test_arm.sh runs this on qemu CPU models with and
// without); elsewhere no NEON set at all.
TEST(NeonFeaturesTest, KernelChoiceFollowsDetection) {
  const CpuFeatures& f = GetCpuFeatures();
#if defined(__aarch64__)
  EXPECT_TRUE(f.neon);
  EXPECT_TRUE(IsaAvailable(Isa::kNeon));
  EXPECT_EQ(IsaAvailable(Isa::kNeonDotprod), f.neon_dotprod);
  const Isa best = f.neon_dotprod ? Isa::kNeonDotprod : Isa::kNeon;
  EXPECT_EQ(matmul_internal::ActiveKernelSet().isa, best);
  EXPECT_STREQ(matmul_internal::IntKernelsFor(best).name,
               f.neon_dotprod ? "neon-dotprod-int8" : "neon-int8");
  EXPECT_STREQ(matmul_internal::IntKernelsFor(Isa::kNeon).name, "neon-int8");
  std::printf("  neon_dotprod=%d, matmul kernels %s\n", f.neon_dotprod,
              matmul_internal::IsaName(best));
#else
  EXPECT_FALSE(f.neon);
  EXPECT_FALSE(f.neon_dotprod);
  EXPECT_FALSE(IsaAvailable(Isa::kNeon));
  EXPECT_FALSE(IsaAvailable(Isa::kNeonDotprod));
  EXPECT_EQ(matmul_internal::NeonKernelSet(), nullptr);
  EXPECT_EQ(matmul_internal::NeonIntKernels(), nullptr);
#endif
}

}  // namespace
}  // namespace jisu
