#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/half.h"
#include "ops/matmul.h"

namespace jisu {
namespace attention_internal {
namespace {

// Row p of a paged head as float: F32 rows in place, F16 rows widened into `buf`.
const float* RowAsFloat(const void* base, const PagedKvHead& kv, int64_t head_dim, int64_t p,
                        float* buf) {
  const int64_t at =
      kv.block_table[p / kv.block_size] * kv.block_stride + (p % kv.block_size) * head_dim;
  if (kv.type == KvType::kF32) return static_cast<const float*>(base) + at;
  const uint16_t* h = static_cast<const uint16_t*>(base) + at;
  for (int64_t d = 0; d < head_dim; ++d) buf[d] = F16ToF32(h[d]);
  return buf;
}

}  // namespace

void AttendPagedPortable(const float* q, int64_t group, int64_t head_dim, float scale,
                         const PagedKvHead& kv, int64_t first, int64_t last, float* scores,
                         int64_t score_stride, float* out) {
  const int64_t n = last - first + 1;
  std::vector<float> buf(kv.type == KvType::kF32 ? 0 : static_cast<size_t>(head_dim));
  // scores[g][p - first] = q_g . k_p: F32 one cache block at a time, F16 one widened row at a
  // time (the same float dot either way).
  for (int64_t p0 = first; p0 <= last;) {
    const int64_t slot = p0 % kv.block_size;
    const int64_t count =
        kv.type == KvType::kF32 ? std::min(kv.block_size - slot, last - p0 + 1) : 1;
    const float* k = RowAsFloat(kv.keys, kv, head_dim, p0, buf.data());
    DotRowsF32(k, head_dim, head_dim, count, q, head_dim, group, scores + (p0 - first),
               score_stride);
    p0 += count;
  }
  for (int64_t g = 0; g < group; ++g) {
    float* s = scores + g * score_stride;
    float max_score = -INFINITY;
    for (int64_t i = 0; i < n; ++i) max_score = std::max(max_score, s[i] *= scale);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += (s[i] = std::exp(s[i] - max_score));
    const float inv_sum = 1.0f / sum;
    for (int64_t i = 0; i < n; ++i) s[i] *= inv_sum;
  }
  std::fill(out, out + group * head_dim, 0.0f);
  for (int64_t p = first; p <= last; ++p) {
    const float* v = RowAsFloat(kv.values, kv, head_dim, p, buf.data());
    for (int64_t g = 0; g < group; ++g) {
      const float w = scores[g * score_stride + (p - first)];
      float* o = out + g * head_dim;
      for (int64_t d = 0; d < head_dim; ++d) o[d] += w * v[d];
    }
  }
}

}  // namespace attention_internal

void AttendPaged(const float* q, int64_t group, int64_t head_dim, float scale,
                 const PagedKvHead& kv, int64_t first, int64_t last, float* scores,
                 int64_t score_stride, float* out) {
  if (attention_internal::AttendPagedAvx512(q, group, head_dim, scale, kv, first, last, scores,
                                            score_stride, out)) {
    return;
  }
  if (attention_internal::AttendPagedAvx2(q, group, head_dim, scale, kv, first, last, scores,
                                          score_stride, out)) {
    return;
  }
  attention_internal::AttendPagedPortable(q, group, head_dim, scale, kv, first, last, scores,
                                          score_stride, out);
}

}  // namespace jisu
