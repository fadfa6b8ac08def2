#include "core/cpu_info.h"

#include <gtest/gtest.h>

namespace jisu {
namespace {

TEST(CpuInfo, ParsesX86Cpuinfo) {
  const std::string text =
      "processor\t: 0\nmodel name\t: Test CPU @ 3GHz\nphysical id\t: 0\ncore id\t: 0\n"
      "flags\t\t: fpu sse4_2 avx avx2 fma f16c avx512f avx512bw avx512vl avx512_vnni amx_int8\n\n"
      "processor\t: 1\nmodel name\t: Test CPU @ 3GHz\nphysical id\t: 0\ncore id\t: 0\n"
      "flags\t\t: fpu sse4_2 avx avx2 fma f16c avx512f avx512bw avx512vl avx512_vnni amx_int8\n\n"
      "processor\t: 2\nmodel name\t: Test CPU @ 3GHz\nphysical id\t: 0\ncore id\t: 1\n"
      "flags\t\t: fpu\n";
  CpuInfo info;
  ParseProcCpuinfo(text, &info);
  EXPECT_EQ(info.model, "Test CPU @ 3GHz");
  EXPECT_EQ(info.logical_cpus, 3);
  EXPECT_EQ(info.physical_cores, 2);  // two threads share core 0
  const std::vector<std::string> want = {"sse4_2",      "avx",     "avx2",     "fma",
                                         "f16c",        "avx512f", "avx512bw", "avx512vl",
                                         "avx512_vnni", "amx_int8"};
  EXPECT_EQ(info.isa_features, want);
}

TEST(CpuInfo, ParsesAarch64Cpuinfo) {
  const std::string text =
      "processor\t: 0\nBogoMIPS\t: 50.00\n"
      "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp asimddp i8mm\n"
      "CPU implementer\t: 0x41\n\nprocessor\t: 1\n"
      "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp asimddp i8mm\n";
  CpuInfo info;
  ParseProcCpuinfo(text, &info);
  EXPECT_EQ(info.logical_cpus, 2);
  EXPECT_EQ(info.physical_cores, 0);  // unknown
  const std::vector<std::string> want = {"asimd", "asimdhp", "asimddp", "i8mm"};
  EXPECT_EQ(info.isa_features, want);
}

TEST(CpuInfo, ParsesMeminfo) {
  CpuInfo info;
  ParseProcMeminfo("MemTotal:       24681024 kB\nMemFree:  100 kB\nMemAvailable:   22000000 kB\n",
                   &info);
  EXPECT_EQ(info.mem_total_bytes, uint64_t{24681024} * 1024);
  EXPECT_EQ(info.mem_available_bytes, uint64_t{22000000} * 1024);
}

TEST(CpuInfo, ReadsThisMachine) {
  const CpuInfo info = ReadCpuInfo();
  EXPECT_GT(info.logical_cpus, 0);
  EXPECT_FALSE(info.arch.empty());
}

}  // namespace
}  // namespace jisu
