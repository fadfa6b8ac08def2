#include "core/cpu_info.h"

#include <sched.h>
#include <sys/utsname.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

namespace jisu {
namespace {

// Extensions that decide which kernels can run, in display order.
constexpr const char* kInterestingFlags[] = {
    // x86
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512dq", "avx512bw",
    "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16",
    // aarch64
    "asimd", "asimdhp", "asimddp", "i8mm", "bf16", "sve", "sve2", "sme"};

std::string ReadSmallFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return "";
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

std::string Trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// "48K" / "2048K" / "1M" -> bytes.
uint64_t ParseSize(const std::string& text) {
  const std::string s = Trim(text);
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return 0;
  uint64_t v = std::stoull(s);
  const char unit = s.back();
  if (unit == 'K') v <<= 10;
  if (unit == 'M') v <<= 20;
  if (unit == 'G') v <<= 30;
  return v;
}

int CountCpuList(const std::string& text) {  // "0-3,6,8-9" -> 7
  int count = 0;
  std::stringstream ss(Trim(text));
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) continue;
    const size_t dash = part.find('-');
    if (dash == std::string::npos) {
      ++count;
    } else {
      count += std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
    }
  }
  return count;
}

}  // namespace

void ParseProcCpuinfo(const std::string& text, CpuInfo* info) {
  std::istringstream in(text);
  std::string line;
  std::set<std::string> flags;
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::string physical_id;
  int processors = 0;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = Trim(line.substr(0, colon));
    const std::string value = Trim(line.substr(colon + 1));
    if (key == "processor") {
      ++processors;
    } else if ((key == "model name" || key == "Model") && info->model.empty()) {
      info->model = value;
    } else if (key == "flags" || key == "Features") {
      std::istringstream fs(value);
      std::string f;
      while (fs >> f) flags.insert(f);
    } else if (key == "physical id") {
      physical_id = value;
    } else if (key == "core id") {
      cores.emplace(physical_id, value);
    }
  }
  if (processors > 0) info->logical_cpus = processors;
  if (!cores.empty()) info->physical_cores = static_cast<int>(cores.size());
  info->isa_features.clear();
  for (const char* f : kInterestingFlags) {
    if (flags.count(f)) info->isa_features.emplace_back(f);
  }
}

void ParseProcMeminfo(const std::string& text, CpuInfo* info) {
  std::istringstream in(text);
  std::string key, unit;
  uint64_t value = 0;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemTotal:") info->mem_total_bytes = value << 10;
    if (key == "MemAvailable:") info->mem_available_bytes = value << 10;
  }
}

CpuInfo ReadCpuInfo() {
  CpuInfo info;
  utsname u{};
  if (::uname(&u) == 0) info.arch = u.machine;
  ParseProcCpuinfo(ReadSmallFile("/proc/cpuinfo"), &info);
  if (info.logical_cpus == 0)
    info.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  ParseProcMeminfo(ReadSmallFile("/proc/meminfo"), &info);
#ifdef __linux__
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) info.affinity_cpus = CPU_COUNT(&set);
#endif
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = ReadSmallFile(dir + "level");
    if (level.empty()) break;
    CacheLevel c;
    c.level = std::atoi(level.c_str());
    c.type = Trim(ReadSmallFile(dir + "type"));
    c.bytes = ParseSize(ReadSmallFile(dir + "size"));
    c.shared_by_cpus = CountCpuList(ReadSmallFile(dir + "shared_cpu_list"));
    info.caches.push_back(std::move(c));
  }
  return info;
}

}  // namespace jisu
