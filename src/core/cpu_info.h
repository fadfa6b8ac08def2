// What `jisu info --system` reports about the machine: CPU model, core and thread counts, the
// instruction-set extensions that matter for kernels, cache sizes and memory. Read from Linux's
// /proc and /sys (the flags there are what the kernel enabled, so an extension the OS does not
// save state for is absent); fields that cannot be read stay empty/zero.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jisu {

struct CacheLevel {
  int level = 0;
  std::string type;  // "Data", "Instruction", "Unified"
  uint64_t bytes = 0;
  int shared_by_cpus = 0;  // logical CPUs sharing it (0: unknown)
};

struct CpuInfo {
  std::string model;       // "Intel(R) Xeon(R) ..."; empty if unknown
  std::string arch;        // "x86_64", "aarch64", ...
  int logical_cpus = 0;    // hardware threads online
  int physical_cores = 0;  // 0: unknown
  int affinity_cpus = 0;   // CPUs this process may run on (cgroup/taskset); 0: unknown
  // Kernel-relevant extensions present, in a fixed order (x86: avx2, fma, f16c, avx512f, ...,
  // amx_int8; aarch64: asimd, asimddp, i8mm, ...). Names as /proc/cpuinfo spells them.
  std::vector<std::string> isa_features;
  std::vector<CacheLevel> caches;  // of CPU 0
  uint64_t mem_total_bytes = 0;
  uint64_t mem_available_bytes = 0;
};

// Reads the machine's description (cheap; reads a few small files).
CpuInfo ReadCpuInfo();

// Parses /proc/cpuinfo text (exposed for tests): model, logical CPUs, physical cores and the
// kernel-relevant flags.
void ParseProcCpuinfo(const std::string& text, CpuInfo* info);
// Parses /proc/meminfo text (exposed for tests).
void ParseProcMeminfo(const std::string& text, CpuInfo* info);

}  // namespace jisu
