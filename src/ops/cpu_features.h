// Run-time CPU feature detection for choosing kernels. One binary built for baseline x86-64
// must pick AVX2/AVX-512 code only where both the CPU and the OS (saved register state,
// XGETBV) support it. Detected once; the result never changes during a run.
#pragma once

namespace jisu {

struct CpuFeatures {
  bool avx2 = false;    // AVX2 + FMA + F16C, with OS-enabled YMM state
  bool avx512 = false;  // AVX-512 F/BW/VL/DQ (plus the above), with OS-enabled ZMM state
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool amd = false;  // CPUID vendor "AuthenticAMD": some kernel tunings differ by vendor
};

// Features of the machine we run on (all false on non-x86 builds).
const CpuFeatures& GetCpuFeatures();

}  // namespace jisu
