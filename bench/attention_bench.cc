// Manual micro-benchmark for paged attention (built by CMake as build/attention_bench, not a
// test): the decode-time call of ops/attention.h over many sequences whose blocks are
// scattered through a pool larger than the caches, as a batched decode step sees them.
//   ./build/attention_bench [context=256] [group=3] [head_dim=64] [kv=f16|f32]
// Prints ns per call and per (position, query head) for the kernel AttendPaged picks here.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "ops/attention.h"

using namespace jisu;

int main(int argc, char** argv) {
  const int64_t context = argc > 1 ? std::atoll(argv[1]) : 256;
  const int64_t group = argc > 2 ? std::atoll(argv[2]) : 3;
  const int64_t head_dim = argc > 3 ? std::atoll(argv[3]) : 64;
  const bool f16 = argc > 4 ? std::strcmp(argv[4], "f32") != 0 : true;
  if (context < 1 || group < 1 || head_dim < 1 || head_dim % 8 != 0) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  constexpr int64_t kBlockSize = 16, kSeqs = 64;
  const int64_t blocks_per_seq = (context + kBlockSize - 1) / kBlockSize;
  const int64_t blocks = kSeqs * blocks_per_seq;
  const int64_t block_elems = kBlockSize * head_dim;  // one KV head
  const size_t elem = f16 ? 2 : 4;
  std::vector<uint8_t> keys(blocks * block_elems * elem), values(keys.size());
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t i = 0; i < keys.size() / elem; ++i) {
    const float k = normal(rng), v = normal(rng);
    if (f16) {
      const uint16_t hk = F32ToF16(k), hv = F32ToF16(v);
      std::memcpy(keys.data() + 2 * i, &hk, 2);
      std::memcpy(values.data() + 2 * i, &hv, 2);
    } else {
      std::memcpy(keys.data() + 4 * i, &k, 4);
      std::memcpy(values.data() + 4 * i, &v, 4);
    }
  }
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng);
  std::vector<float> q(group * head_dim), out(group * head_dim), scores(group * context);
  for (float& x : q) x = normal(rng);
  PagedKvHead kv;
  kv.type = f16 ? KvType::kF16 : KvType::kF32;
  kv.keys = keys.data();
  kv.values = values.data();
  kv.block_stride = block_elems;
  kv.block_size = kBlockSize;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));

  double best = 1e30;
  float sink = 0;
  for (int round = 0; round < 7; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t s = 0; s < kSeqs; ++s) {
      kv.block_table = table.data() + s * blocks_per_seq;
      AttendPaged(q.data(), group, head_dim, scale, kv, 0, context - 1, scores.data(), context,
                  out.data());
      sink += out[0];
    }
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ns / kSeqs);
  }
  std::printf(
      "attention: context %lld, %lld query heads / KV head, head_dim %lld, %s, %lld sequences "
      "(%.1f MiB of KV): best %.0f ns a call, %.2f ns a position and head (sink %g)\n",
      static_cast<long long>(context), static_cast<long long>(group),
      static_cast<long long>(head_dim), f16 ? "f16" : "f32", static_cast<long long>(kSeqs),
      2.0 * keys.size() / (1 << 20), best, best / (context * group), sink);
  return 0;
}
