// `jisu bench-matmul`: time of one MatMul (default: a single token, i.e. a decode step's
// matrix-vector product) for several weight types at one shape, on each ISA this CPU runs.
// Weights are random, quantized once and copied until the working set exceeds --mib, then
// the copies are used in turn so each call streams its weights from memory as in a real
// decode step (not from a cache that still holds the last call's matrix). Prints the median
// wall time per call, the weight bytes read per second, and the median CPU time of the
// calling thread (at 1 thread: the call's own work, robust to being descheduled on a busy
// machine; at more threads only the caller's share).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/dtype.h"
#include "core/thread_pool.h"
#include "ops/matmul.h"
#include "ops/matmul_kernels.h"
#include "ops/quant.h"

namespace jisu::cli {
namespace {

struct BenchMatMulFlags {
  std::string types = "q4_0,q4_k,q5_k,q6_k,q8_0";
  std::string threads = "1,2";
  std::string isas = "auto";
  int64_t rows = 5632, cols = 2048, tokens = 1;
  int iters = 200;
  int64_t mib = 512;
  bool prepack = false;
  bool interleave = false;
  std::string matmul = "auto";
};

// A layout derived from every copy of the timed matrix (GEMM panels, interleaved copy):
// bytes per copy (0: none) in one 64-byte-aligned buffer.
struct CopyLayout {
  size_t bytes = 0;
  std::vector<uint8_t> store;
  uint8_t* base = nullptr;
  const uint8_t* At(size_t copy) const { return bytes > 0 ? base + copy * bytes : nullptr; }
};

template <class CopyAt>
CopyLayout BuildCopyLayout(
    bool wanted, size_t copies, const CopyAt& copy_at, size_t (*bytes_of)(const WeightMatrix&),
    const std::function<void(const WeightMatrix&, uint8_t*, ThreadPool&)>& build) {
  CopyLayout l;
  l.bytes = wanted ? bytes_of(copy_at(0)) : 0;
  if (l.bytes == 0) return l;
  l.store.resize(l.bytes * copies + 64);
  l.base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(l.store.data()) + 63) / 64 * 64);
  ThreadPool pool(0);
  for (size_t c = 0; c < copies; ++c) build(copy_at(c), l.base + c * l.bytes, pool);
  return l;
}

double ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

double Median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Status RunBenchMatMul(const BenchMatMulFlags& f) {
  using matmul_internal::Isa;
  if (f.rows <= 0 || f.cols <= 0 || f.tokens <= 0 || f.iters <= 0 || f.mib < 0) {
    return Status::InvalidArgument("--rows, --cols, --tokens, --iters must be positive");
  }
  JISU_ASSIGN_OR_RETURN(const MatmulPath path, MatmulFromFlag(f.matmul));
  std::vector<Isa> isas;
  if (f.isas == "auto") {
    isas.push_back(matmul_internal::ActiveKernelSet().isa);
  } else {
    for (const std::string& name : Split(f.isas)) {
      std::optional<Isa> isa;
      for (Isa i : matmul_internal::kAllIsas) {
        if (name == matmul_internal::IsaName(i)) isa = i;
      }
      if (!isa || !matmul_internal::IsaAvailable(*isa)) {
        return Status::InvalidArgument("--isa: '" + name + "' is not available here");
      }
      isas.push_back(*isa);
    }
  }
  std::vector<int> thread_counts;
  for (const std::string& t : Split(f.threads)) thread_counts.push_back(std::stoi(t));

  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> src(static_cast<size_t>(f.cols));
  std::vector<float> x(static_cast<size_t>(f.tokens * f.cols));
  for (auto& v : x) v = normal(rng);
  std::vector<float> y(static_cast<size_t>(f.tokens * f.rows));

  std::printf("shape %lld x %lld (rows x cols), %lld token(s), median of %d calls\n",
              static_cast<long long>(f.rows), static_cast<long long>(f.cols),
              static_cast<long long>(f.tokens), f.iters);
  std::printf("%-6s %-7s %7s %10s %9s %10s %8s\n", "type", "isa", "threads", "us/call", "GB/s",
              "cpu_us", "copies");
  for (const std::string& tname : Split(f.types)) {
    const std::optional<DType> dtype = DTypeFromName(tname);
    if (!dtype || !IsSupportedWeightType(*dtype) || !matmul_internal::WeightKindOf(*dtype)) {
      return Status::InvalidArgument("--types: unsupported type '" + tname + "'");
    }
    const std::optional<uint64_t> row_bytes = RowBytes(*dtype, static_cast<uint64_t>(f.cols));
    if (!row_bytes) {
      return Status::InvalidArgument("--cols is not a multiple of the " + tname + " block size");
    }
    const size_t matrix_bytes = *row_bytes * static_cast<size_t>(f.rows);
    const size_t copies = std::max<size_t>(
        1, (static_cast<size_t>(f.mib) * 1024 * 1024 + matrix_bytes - 1) / matrix_bytes);
    std::vector<uint8_t> data(matrix_bytes * copies);
    // Quantize a few distinct rows and tile them: the content does not change the speed.
    const int64_t distinct = std::min<int64_t>(f.rows, 64);
    for (int64_t r = 0; r < distinct; ++r) {
      for (auto& v : src) v = normal(rng);
      QuantizeRow(*dtype, src.data(), data.data() + r * *row_bytes, f.cols);
    }
    for (int64_t r = distinct; r < f.rows; ++r) {
      std::memcpy(data.data() + r * *row_bytes, data.data() + (r % distinct) * *row_bytes,
                  *row_bytes);
    }
    for (size_t c = 1; c < copies; ++c) {
      std::memcpy(data.data() + c * matrix_bytes, data.data(), matrix_bytes);
    }
    // --prepack: every copy's integer GEMM panels (WeightMatrix::int_panels); --interleave:
    // every copy repacked into the 16-row decode layout (WeightMatrix::interleaved) where this
    // CPU reads it. Both built once, before timing.
    const auto copy_at = [&](size_t c) {
      return WeightMatrix{*dtype, data.data() + c * matrix_bytes, f.rows, f.cols, *row_bytes};
    };
    const CopyLayout panels =
        BuildCopyLayout(f.prepack, copies, copy_at, IntPanelBytes, PackIntPanels);
    const CopyLayout il =
        BuildCopyLayout(f.interleave, copies, copy_at, InterleavedBytes,
                        [&](const WeightMatrix& w, uint8_t* out, ThreadPool& pool) {
                          InterleaveWeights(w, out, pool, path);
                        });
    if (f.interleave && il.bytes == 0) {
      std::printf("(%s: no interleaved layout on this CPU)\n", tname.c_str());
    }
    for (Isa isa : isas) {
      matmul_internal::ForceIsa(isa);
      for (int nt : thread_counts) {
        ThreadPool pool(nt);
        std::vector<double> us, cpu;
        for (int it = -3; it < f.iters; ++it) {
          const size_t copy = static_cast<size_t>(it + 3) % copies;
          WeightMatrix w = copy_at(copy);
          w.int_panels = panels.At(copy);
          w.interleaved = il.At(copy);
          w.interleaved_bf16 = w.interleaved != nullptr && InterleavesToBf16(w, path);
          const double c0 = ThreadCpuMicros();
          const auto t0 = std::chrono::steady_clock::now();
          MatMul(w, x.data(), f.cols, f.tokens, y.data(), f.rows, pool, nullptr, {.path = path});
          const auto t1 = std::chrono::steady_clock::now();
          const double c1 = ThreadCpuMicros();
          if (it >= 0) {
            us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            cpu.push_back(c1 - c0);
          }
        }
        const double med = Median(us);
        std::printf("%-6s %-7s %7d %10.1f %9.2f %10.1f %8zu\n", tname.c_str(),
                    matmul_internal::IsaName(isa), nt, med, matrix_bytes / med / 1e3, Median(cpu),
                    copies);
      }
    }
    matmul_internal::ForceIsa(std::nullopt);
  }
  return Status::Ok();
}

}  // namespace

void RegisterBenchMatMul(CLI::App& app) {
  auto flags = std::make_shared<BenchMatMulFlags>();
  auto* cmd = app.add_subcommand("bench-matmul", "Time one weight-type MatMul (decode GEMV)");
  cmd->add_option("--types", flags->types, "comma-separated weight types");
  cmd->add_option("--threads", flags->threads, "comma-separated thread counts");
  cmd->add_option("--isa", flags->isas, "auto, or comma-separated: scalar, avx2, avx512");
  cmd->add_option("--rows", flags->rows, "output features");
  cmd->add_option("--cols", flags->cols, "input features");
  cmd->add_option("--tokens", flags->tokens, "activation rows (1 = decode)");
  cmd->add_option("--iters", flags->iters, "timed calls per configuration");
  cmd->add_option("--mib", flags->mib, "weight working set to cycle through (MiB)");
  cmd->add_flag("--prepack", flags->prepack,
                "Q8_0/Q4_0/Q4_1: integer GEMM panels packed once before timing");
  cmd->add_flag(
      "--interleave", flags->interleave,
      "Q8_0/Q4_0/Q4_1/F16/BF16: weights repacked into the 16-row interleaved decode layout "
      "(AVX-512 or AVX2)");
  cmd->add_option("--matmul", flags->matmul, kMatmulFlagHelp);
  cmd->callback([flags] { ReportStatus(RunBenchMatMul(*flags)); });
}

}  // namespace jisu::cli
