// Manual micro-benchmark for MatMul (built by CMake as build/ops_bench, not a test):
//   ./build/ops_bench [isa: auto|scalar|avx2|avx512] [filter: dtype name or "all"]
// Prefill: GFLOP/s of 512 tokens x 2048 x 2048 (2*T*N*K flops).
// Decode: GB/s of weight bytes streamed for 1 token, cycling through enough copies of the
// matrix (>= 512 MiB) that each call reads from DRAM, not from cache.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ops/matmul.h"
#include "ops/matmul_kernels.h"
#include "ops/quant.h"

using namespace jisu;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<uint8_t> MakeWeights(DType dtype, int64_t rows, int64_t cols, size_t* row_bytes) {
  *row_bytes = RowBytes(dtype, cols).value();
  std::vector<uint8_t> bytes(*row_bytes * rows);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> src(cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : src) v = normal(rng);
    QuantizeRow(dtype, src.data(), bytes.data() + r * *row_bytes, cols);
  }
  return bytes;
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// CPU seconds of the whole process: on a shared, oversubscribed machine, work / CPU time
// shows what the kernels do per core when they actually run.
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void Prefill(DType dtype, ThreadPool& pool, int64_t tokens, int64_t rows, int64_t cols) {
  size_t rb;
  const std::vector<uint8_t> w = MakeWeights(dtype, rows, cols, &rb);
  WeightMatrix m{dtype, w.data(), rows, cols, rb};
  std::vector<float> x(tokens * cols, 0.25f), y(tokens * rows);
  MatMul(m, x.data(), cols, tokens, y.data(), rows, pool);  // warm-up (scratch, pages)
  double best = 1e9, best_cpu = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    const double c0 = CpuSeconds();
    const auto t0 = Clock::now();
    MatMul(m, x.data(), cols, tokens, y.data(), rows, pool);
    best = std::min(best, Seconds(t0, Clock::now()));
    best_cpu = std::min(best_cpu, CpuSeconds() - c0);
  }
  const double flop = 2.0 * tokens * rows * cols;
  std::printf(
      "  prefill %-5s %lldx%lldx%lld threads=%d: %7.1f GFLOP/s wall (%.1f ms), "
      "%6.1f GFLOP per CPU-s\n",
      std::string(DTypeName(dtype)).c_str(), (long long)tokens, (long long)rows, (long long)cols,
      pool.num_threads(), flop / best / 1e9, best * 1e3, flop / best_cpu / 1e9);
}

void Decode(DType dtype, ThreadPool& pool, int64_t rows, int64_t cols) {
  size_t rb;
  const std::vector<uint8_t> one = MakeWeights(dtype, rows, cols, &rb);
  const size_t mat_bytes = one.size();
  // JISU_BENCH_CACHED=1: one copy, so the weights stay in cache (kernel compute limit).
  const size_t copies =
      std::getenv("JISU_BENCH_CACHED") ? 1 : std::max<size_t>(2, (size_t{512} << 20) / mat_bytes);
  std::vector<uint8_t> all(mat_bytes * copies);
  for (size_t c = 0; c < copies; ++c)
    std::memcpy(all.data() + c * mat_bytes, one.data(), mat_bytes);
  std::vector<float> x(cols, 0.25f), y(rows);
  for (size_t c = 0; c < copies; ++c) {  // warm-up: touch every page once
    WeightMatrix m{dtype, all.data() + c * mat_bytes, rows, cols, rb};
    MatMul(m, x.data(), cols, 1, y.data(), rows, pool);
  }
  const int calls = static_cast<int>(std::max<size_t>(copies, 40));
  const double c0 = CpuSeconds();
  const auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i) {
    WeightMatrix m{dtype, all.data() + (i % copies) * mat_bytes, rows, cols, rb};
    MatMul(m, x.data(), cols, 1, y.data(), rows, pool);
  }
  const double s = Seconds(t0, Clock::now()) / calls;
  const double cpu = (CpuSeconds() - c0) / calls;
  std::printf(
      "  decode  %-5s 1x%lldx%lld threads=%d: %6.1f GB/s weights wall (%.3f ms/call), "
      "%6.1f GB per CPU-s\n",
      std::string(DTypeName(dtype)).c_str(), (long long)rows, (long long)cols, pool.num_threads(),
      mat_bytes / s / 1e9, s * 1e3, mat_bytes / cpu / 1e9);
}

// Kernel speed without DRAM or scheduler noise: a matrix that stays in L2, the minimum over
// many short calls (a short call usually runs without being preempted).
void DecodeKernel(DType dtype, int64_t rows, int64_t cols, int nt) {
  size_t rb;
  const std::vector<uint8_t> w = MakeWeights(dtype, rows, cols, &rb);
  WeightMatrix m{dtype, w.data(), rows, cols, rb};
  ThreadPool pool(1);
  std::vector<float> x(cols * nt, 0.25f), y(rows * nt);
  double best = 1e9;
  for (int i = 0; i < 300; ++i) {
    const auto t0 = Clock::now();
    MatMul(m, x.data(), cols, nt, y.data(), rows, pool);
    best = std::min(best, Seconds(t0, Clock::now()));
  }
  std::printf(
      "  kernel  %-5s %dx%lldx%lld: %6.1f GB/s, %.2f ns per 32 weights (L2-resident, "
      "min of 300)\n",
      std::string(DTypeName(dtype)).c_str(), nt, (long long)rows, (long long)cols,
      w.size() / best / 1e9, best * 1e9 / (rows * cols / 32.0));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace jisu::matmul_internal;
  const std::string isa = argc > 1 ? argv[1] : "auto";
  const std::string filter = argc > 2 ? argv[2] : "all";
  if (isa == "scalar") ForceIsa(Isa::kScalar);
  if (isa == "avx2") ForceIsa(Isa::kAvx2);
  if (isa == "avx512") ForceIsa(Isa::kAvx512);
  std::printf("kernels: %s\n", IsaName(ActiveKernelSet().isa));
  if (std::getenv("JISU_BENCH_KERNEL")) {
    for (DType dt :
         {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1}) {
      if (filter != "all" && filter != DTypeName(dt)) continue;
      for (int nt : {1, 4}) DecodeKernel(dt, dt == DType::kF32 ? 64 : 256, 2048, nt);
    }
    return 0;
  }
  ThreadPool pool1(1), pool2(2);
  for (DType dt :
       {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1}) {
    if (filter != "all" && filter != DTypeName(dt)) continue;
    for (ThreadPool* pool : {&pool1, &pool2}) {
      Prefill(dt, *pool, 512, 2048, 2048);
      Decode(dt, *pool, 5632, 2048);
      Decode(dt, *pool, 2048, 5632);
    }
  }
  return 0;
}
