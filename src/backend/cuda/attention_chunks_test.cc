// The automatic attention key chunk: split only when the work items leave SMs idle, and always
// on page boundaries (runs without a GPU).
#include "backend/cuda/attention_chunks.h"

#include <gtest/gtest.h>

namespace jisu::cuda {
namespace {

TEST(AttentionChunksTest, ChunksStartOnPageBoundaries) {
  // Batch 64 of 8 KV heads at context 1027 on 132 SMs: two chunks, the second at key 528.
  EXPECT_EQ(AutoAttentionChunk(64, 8, 132, 1027, 16), 528);
  for (int64_t bs : {1, 8, 16, 32, 48}) {
    for (int64_t tiles : {1, 2, 8, 16, 33, 64}) {
      for (int64_t range : {1, 17, 129, 1000, 1027, 4097, 32771}) {
        const int64_t c = AutoAttentionChunk(tiles, 8, 132, range, bs);
        EXPECT_EQ(c % bs, 0) << bs << " " << tiles << " " << range;
        EXPECT_EQ(c % 16, 0) << bs << " " << tiles << " " << range;
        EXPECT_GE(c, std::min<int64_t>(range, 128)) << bs << " " << tiles << " " << range;
      }
    }
  }
}

TEST(AttentionChunksTest, SplitsOnlyWhenSmsWouldIdle) {
  // 256 tiles x 8 heads fill 132 SMs four times over: one chunk covers every key.
  EXPECT_GE(AutoAttentionChunk(256, 8, 132, 5000, 16), 5000);
  // One sequence: about 4 x 132 / 8 = 66 chunks wanted, but none under 128 keys.
  EXPECT_EQ(AutoAttentionChunk(1, 8, 132, 1027, 16), 128);
  // A long context: 66 chunks of 1000 keys, rounded up to a whole page multiple.
  EXPECT_EQ(AutoAttentionChunk(1, 8, 132, 66000, 16), 1008);
  // No tiles or heads (nothing to attend): still a valid, positive chunk.
  EXPECT_GT(AutoAttentionChunk(0, 0, 132, 0, 16), 0);
}

}  // namespace
}  // namespace jisu::cuda
