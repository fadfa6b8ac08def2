#include "core/mem_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "core/huge_pages.h"
#include "core/thread_pool.h"

namespace jisu {
namespace {

// Eight independent sums so the loop is bound by loads, not by an add chain; the compiler
// vectorizes it for the baseline ISA, which is enough to saturate a core's share of memory.
uint64_t SumWords(const uint64_t* p, size_t n) {
  uint64_t s[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) s[k] += p[i + k];
  }
  for (; i < n; ++i) s[0] += p[i];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

}  // namespace

double MeasureReadBandwidth(int threads, const MemBandwidthOptions& options) {
  threads = std::max(1, threads);
  const size_t words = std::max<uint64_t>(options.buffer_bytes, 1 << 20) / sizeof(uint64_t);
  const size_t bytes = words * sizeof(uint64_t);
  // Huge pages, like the weight copies the decode kernels stream (with 4 KiB pages this
  // measured 25.9 / 33.8 GB/s at 1 / 2 threads on Zen 4 where a decode then read 45).
  HugePageBuffer mem;
  try {
    mem = HugePageBuffer(bytes);
  } catch (const std::bad_alloc&) {
    return 0.0;
  }
  auto* data = static_cast<uint64_t*>(mem.data());
  ThreadPool pool(threads);
  // Touch the pages from the threads that will read them (first-touch placement).
  pool.RunOnAll([&](int t) {
    const size_t begin = words * t / threads, end = words * (t + 1) / threads;
    for (size_t i = begin; i < end; ++i) data[i] = i;
  });
  std::atomic<uint64_t> sink{0};
  double best = 0.0;
  for (int pass = 0; pass < std::max(1, options.passes); ++pass) {
    const auto start = std::chrono::steady_clock::now();
    pool.RunOnAll([&](int t) {
      const size_t begin = words * t / threads, end = words * (t + 1) / threads;
      sink.fetch_add(SumWords(data + begin, end - begin), std::memory_order_relaxed);
    });
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (secs > 0) best = std::max(best, static_cast<double>(bytes) / secs / 1e9);
  }
  if (sink.load() == 1) best += 0.0;  // keeps the sums observable
  return best;
}

}  // namespace jisu
