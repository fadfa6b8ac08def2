// The step's metadata for the CUDA backend: token ids, positions, cache slots, logits rows,
// block tables and the attention work items (decode items, prefill tiles, key chunks), built
// in pinned host memory and uploaded with one copy.
#include <algorithm>
#include <cstring>

#include "backend/cuda/attention_chunks.h"
#include "backend/cuda/cuda_backend_impl.h"
#include "kv/kv_cache.h"

namespace jisu::cuda_detail {

// Builds the step's metadata: per token its id, position, cache slot and attention chunk
// count; the logits rows; the block tables; and the attention work items (decode items first,
// then prefill tiles), all in one pinned buffer uploaded with one copy.
Status CudaBackend::Prepare(const ForwardBatch& batch) {
  const int64_t T = batch.num_tokens();
  const int64_t bs = options_.block_size;
  const int group = static_cast<int>(config_.num_heads / config_.num_kv_heads);
  const int window = items_window_;
  decode_rpw_ = 1;
  while (cuda::AttentionRows(decode_rpw_) < group) decode_rpw_ *= 2;
  const int prefill_tile = cuda::AttentionRows(16) / group;  // tokens per prefill tile

  // Tiles first (to choose the chunk size), then chunks.
  std::vector<AttnTile>& tiles = tiles_;
  tiles.clear();
  int64_t table_len = 0;
  int64_t max_range = 0;
  {
    int64_t t = 0;
    for (const BatchSequence& s : batch.sequences) {
      const int64_t used = BlocksForTokens(s.start_position + s.num_tokens, bs);
      const bool decode = s.num_tokens == 1;
      const int64_t step = decode ? 1 : prefill_tile;
      for (int64_t i = 0; i < s.num_tokens; i += step) {
        AttnTile tile;
        tile.q_begin = static_cast<int32_t>(t + i);
        tile.q_count = static_cast<int32_t>(std::min(step, s.num_tokens - i));
        tile.q_pos0 = static_cast<int32_t>(s.start_position + i);
        tile.kv_hi = tile.q_pos0 + tile.q_count;
        // A sliding window's first key rounded down to a page start (the kernels mask by the
        // window anyway), so the kernels' K/V copies stay page-aligned runs.
        tile.kv_lo = window > 0 ? std::max(0, tile.q_pos0 - window + 1) / bs * bs : 0;
        tile.bt_offset = static_cast<int32_t>(table_len);
        tile.decode = decode;
        max_range = std::max<int64_t>(max_range, tile.kv_hi - tile.kv_lo);
        tiles.push_back(tile);
      }
      t += s.num_tokens;
      table_len += used;
    }
  }
  int64_t chunk = options_.attention_chunk_tokens;
  if (chunk <= 0) {
    chunk = cuda::AutoAttentionChunk(static_cast<int64_t>(tiles.size()), config_.num_kv_heads,
                                     num_sms_, max_range, bs);
  }

  items_.clear();
  std::vector<int32_t>& chunks_of_token = chunk_scratch_;
  chunks_of_token.assign(T, 1);
  max_chunks_ = 1;
  num_decode_items_ = num_prefill_items_ = 0;
  for (int pass = 0; pass < 2; ++pass) {  // decode items, then prefill items
    for (const AttnTile& tile : tiles) {
      if (tile.decode != (pass == 0)) continue;
      const int64_t range = tile.kv_hi - tile.kv_lo;
      const int32_t n = static_cast<int32_t>((range + chunk - 1) / chunk);
      max_chunks_ = std::max(max_chunks_, static_cast<int>(n));
      for (int32_t c = 0; c < n; ++c) {
        AttnItem it;
        it.q_begin = tile.q_begin;
        it.q_count = tile.q_count;
        it.q_pos0 = tile.q_pos0;
        it.kv_begin = static_cast<int32_t>(tile.kv_lo + c * chunk);
        it.kv_end =
            static_cast<int32_t>(std::min<int64_t>(tile.kv_hi, tile.kv_lo + (c + 1) * chunk));
        it.bt_offset = tile.bt_offset;
        it.chunk = c;
        it.num_chunks = n;
        items_.push_back(it);
      }
      for (int32_t i = 0; i < tile.q_count; ++i) chunks_of_token[tile.q_begin + i] = n;
      (pass == 0 ? num_decode_items_ : num_prefill_items_) += n;
    }
  }

  const int64_t R = static_cast<int64_t>(batch.logits_rows.size());
  off_ids_ = 0;
  off_pos_ = off_ids_ + T;
  off_slots_ = off_pos_ + T;
  off_chunks_ = off_slots_ + T;
  off_rows_ = off_chunks_ + T;
  // Items before the block tables, so that every offset depends only on the graph key.
  off_items_ = (off_rows_ + R + 3) / 4 * 4;  // 16-byte aligned items
  off_tables_ = off_items_ + items_.size() * (sizeof(AttnItem) / 4);
  const size_t total = off_tables_ + table_len;
  if (total > meta_cap_) {
    if (meta_host_) cudaFreeHost(meta_host_);
    meta_host_ = nullptr;
    meta_cap_ = std::max(total, meta_cap_ * 2);
    JISU_CUDA_RETURN(cudaMallocHost(reinterpret_cast<void**>(&meta_host_), meta_cap_ * 4));
    JISU_RETURN_IF_ERROR(meta_dev_.Resize(meta_cap_ * 4));
    ClearGraphs();  // they point into the old buffer
  }
  int32_t* m = meta_host_;
  {
    int64_t t = 0;
    int64_t table = 0;
    for (const BatchSequence& s : batch.sequences) {
      for (int64_t i = 0; i < s.num_tokens; ++i, ++t) {
        const int64_t pos = s.start_position + i;
        m[off_ids_ + t] = batch.token_ids[t];
        m[off_pos_ + t] = static_cast<int32_t>(pos);
        m[off_slots_ + t] = static_cast<int32_t>(s.block_table[pos / bs] * bs + pos % bs);
      }
      const int64_t used = BlocksForTokens(s.start_position + s.num_tokens, bs);
      std::memcpy(m + off_tables_ + table, s.block_table.data(), used * 4);
      table += used;
    }
  }
  std::memcpy(m + off_chunks_, chunks_of_token.data(), T * 4);
  for (int64_t r = 0; r < R; ++r) m[off_rows_ + r] = static_cast<int32_t>(batch.logits_rows[r]);
  std::memcpy(m + off_items_, items_.data(), items_.size() * sizeof(AttnItem));
  JISU_CUDA_RETURN(cudaMemcpyAsync(meta_dev_.get(), m, total * 4, cudaMemcpyHostToDevice, stream_));
  return Status::Ok();
}

}  // namespace jisu::cuda_detail
