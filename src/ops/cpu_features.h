// Run-time CPU feature detection for choosing kernels. One binary built for baseline x86-64
// must pick AVX2/AVX-512 code only where both the CPU and the OS (saved register state,
// XGETBV) support it; one built for baseline AArch64 (Armv8.0-A: NEON is always there) picks
// the dot-product kernels only where the kernel reports the extension (HWCAP_ASIMDDP).
// Detected once; the result never changes during a run.
#pragma once

namespace jisu {

struct CpuFeatures {
  bool avx2 = false;    // AVX2 + FMA + F16C, with OS-enabled YMM state
  bool avx512 = false;  // AVX-512 F/BW/VL/DQ (plus the above), with OS-enabled ZMM state
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool amd = false;           // CPUID vendor "AuthenticAMD": some kernel tunings differ by vendor
  bool neon = false;          // AArch64 Advanced SIMD (every AArch64 CPU)
  bool neon_dotprod = false;  // SDOT/UDOT (Armv8.2-A option, Armv8.4-A mandatory)
};

// Features of the machine we run on (all false on builds for other architectures).
const CpuFeatures& GetCpuFeatures();

}  // namespace jisu
