// Manual micro-benchmark (built by CMake as build/decode_batch_bench, not a test): MatMul at
// decode batch sizes on the SmolLM2-135M layer shapes (the per-layer projections and the tied
// head), per path.
//   ./build/decode_batch_bench [dtype] [threads] [only this M] [int|float]
// Prints microseconds per call of one layer's matmuls (q,k,v,o,gate,up,down) and of the head.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ops/matmul.h"
#include "ops/matmul_kernels.h"
#include "ops/quant.h"

using namespace jisu;

namespace {

struct Mat {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
};

Mat Make(DType dtype, int64_t rows, int64_t cols) {
  Mat m;
  const size_t rb = RowBytes(dtype, cols).value();
  m.bytes.resize(rb * rows);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<float> src(cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : src) v = normal(rng);
    QuantizeRow(dtype, src.data(), m.bytes.data() + r * rb, cols);
  }
  m.w = {dtype, m.bytes.data(), rows, cols, rb};
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dt = argc > 1 ? argv[1] : "q4_1";
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const DType dtype = dt == "q8_0" ? DType::kQ8_0 : dt == "q4_0" ? DType::kQ4_0 : DType::kQ4_1;
  ThreadPool pool(threads);
  const int64_t h = 576, kv = 192, ffn = 1536;
  std::vector<Mat> layer;
  for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{
           {h, h}, {kv, h}, {kv, h}, {h, h}, {ffn, h}, {ffn, h}, {h, ffn}}) {
    layer.push_back(Make(dtype, r, c));
  }
  const Mat head = Make(DType::kQ8_0, 49152, h);
  std::vector<float> x(64 * ffn, 0.1f), y(64 * 49152);
  using Clock = std::chrono::steady_clock;
  const int only_m = argc > 3 ? std::atoi(argv[3]) : 0;
  // Fourth argument "int" or "float": the activation path (default: automatic).
  MatMulOptions options;
  if (argc > 4)
    options.path = std::string(argv[4]) == "int" ? MatmulPath::kInt8 : MatmulPath::kFloat;
  for (int m : {1, 4, 8, 16, 32}) {
    if (only_m != 0 && m != only_m) continue;
    for (int path = 0; path < 3; ++path) {
      if (path == 0) {
        matmul_internal::ForcePath(std::nullopt);
      } else {
        matmul_internal::ForcePath(path == 1 ? matmul_internal::Path::kDot
                                             : matmul_internal::Path::kGemm);
      }
      const int reps = 100;
      double best_layer = 1e9, best_head = 1e9;
      for (int r = 0; r < reps; ++r) {
        auto t0 = Clock::now();
        for (const Mat& w : layer) {
          MatMul(w.w, x.data(), ffn, m, y.data(), 49152, pool, nullptr, options);
        }
        auto t1 = Clock::now();
        MatMul(head.w, x.data(), ffn, m, y.data(), 49152, pool, nullptr, options);
        auto t2 = Clock::now();
        best_layer = std::min(best_layer, std::chrono::duration<double>(t1 - t0).count());
        best_head = std::min(best_head, std::chrono::duration<double>(t2 - t1).count());
      }
      std::printf("M=%2d %-5s layer %8.1f us  head %8.1f us\n", m,
                  path == 0   ? "auto"
                  : path == 1 ? "dot"
                              : "gemm",
                  best_layer * 1e6, best_head * 1e6);
    }
  }
  return 0;
}
