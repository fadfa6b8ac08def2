// A stand-in for a backend that draws tokens on its device, computed on the host, so the
// engine's device-sampling paths (rows planned for the device, token masks filled during the
// forward pass, verification rows drawn at once) run in tests without a GPU. A device row gets
// what the CUDA backend does to it (cuda_sampling_step.cc, token_mask.cu): logit_bias added in
// order, then -inf for the ids its mask disallows; then a draw: greedy is the argmax (ties to
// the lowest id, NaN never wins, token 0 when nothing is above -inf), otherwise the softmax at
// the row's temperature (no other filter) at the row's u.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "backend/forward_backend.h"

namespace jisu::testing {

// Draws the device rows of `logits` ([rows, vocab], modified) into ids; returns the number of
// masked rows. fill_masks is called once when a row is masked.
inline int64_t DrawDeviceRows(std::span<const RowSampling> sampling, FillTokenMasksFn fill_masks,
                              float* logits, int64_t vocab, int32_t* ids) {
  const size_t words = static_cast<size_t>((vocab + 31) / 32);
  int64_t masked = 0;
  for (const RowSampling& r : sampling) masked += r.on_device && r.masked ? 1 : 0;
  std::vector<uint32_t> masks(static_cast<size_t>(masked) * words, 0xdeadbeefu);
  if (masked > 0) fill_masks(masks.data(), words);
  const uint32_t* mask = masks.data();
  for (size_t r = 0; r < sampling.size(); ++r) {
    const RowSampling& s = sampling[r];
    if (!s.on_device) continue;
    float* row = logits + static_cast<int64_t>(r) * vocab;
    for (const auto& [id, bias] : s.logit_bias) {
      if (id >= 0 && id < vocab) row[id] += bias;
    }
    if (s.masked) {
      for (int64_t id = 0; id < vocab; ++id) {
        if (!((mask[id >> 5] >> (id & 31)) & 1u)) row[id] = -std::numeric_limits<float>::infinity();
      }
      mask += words;
    }
    float best = -std::numeric_limits<float>::infinity();
    int32_t arg = 0;
    for (int64_t id = 0; id < vocab; ++id) {
      if (row[id] > best) {
        best = row[id];
        arg = static_cast<int32_t>(id);
      }
    }
    if (s.temperature > 0 && std::isfinite(best)) {
      double total = 0;
      for (int64_t id = 0; id < vocab; ++id) {
        if (row[id] > -std::numeric_limits<float>::infinity()) {
          total += std::exp((static_cast<double>(row[id]) - best) / s.temperature);
        }
      }
      const double point = s.u * total;
      double sum = 0;
      for (int64_t id = 0; id < vocab; ++id) {
        if (!(row[id] > -std::numeric_limits<float>::infinity())) continue;
        sum += std::exp((static_cast<double>(row[id]) - best) / s.temperature);
        arg = static_cast<int32_t>(id);
        if (sum > point) break;
      }
    }
    ids[r] = arg;
  }
  return masked;
}

// A host backend (`inner`) that claims CanSample and draws device rows with DrawDeviceRows,
// counting what it drew.
class FakeDeviceSamplingBackend final : public ForwardBackend {
 public:
  explicit FakeDeviceSamplingBackend(std::unique_ptr<ForwardBackend> inner)
      : inner_(std::move(inner)) {}
  const ModelConfig& config() const override { return inner_->config(); }
  int64_t num_kv_blocks() const override { return inner_->num_kv_blocks(); }
  int64_t kv_block_size() const override { return inner_->kv_block_size(); }
  uint64_t kv_bytes_per_block() const override { return inner_->kv_bytes_per_block(); }
  Status Forward(const ForwardBatch& batch, float* logits) override {
    return inner_->Forward(batch, logits);
  }
  bool CanSample() const override { return true; }
  using ForwardBackend::ForwardSample;
  Status ForwardSample(const ForwardBatch& batch, std::span<const RowSampling> sampling,
                       FillTokenMasksFn fill_masks, float* logits, int32_t* ids) override {
    JISU_RETURN_IF_ERROR(inner_->Forward(batch, logits));
    const int64_t m = DrawDeviceRows(sampling, fill_masks, logits, config().vocab_size, ids);
    masked_rows += m;
    // Which sequence each row belongs to, to count masked rows of verifications.
    std::vector<int64_t> seq_of(sampling.size()), rows_of(batch.sequences.size(), 0);
    for (size_t r = 0, q = 0, end = 0; r < sampling.size(); ++r) {
      while (q < batch.sequences.size() &&
             batch.logits_rows[r] >= static_cast<int64_t>(end) + batch.sequences[q].num_tokens) {
        end += static_cast<size_t>(batch.sequences[q++].num_tokens);
      }
      seq_of[r] = static_cast<int64_t>(q);
      ++rows_of[q];
    }
    for (size_t r = 0; r < sampling.size(); ++r) {
      device_rows += sampling[r].on_device ? 1 : 0;
      masked_verification_rows += sampling[r].masked && rows_of[seq_of[r]] > 1 ? 1 : 0;
    }
    return Status::Ok();
  }
  ThreadPool* host_pool() override { return inner_->host_pool(); }
  std::string description() const override { return "fake device (" + inner_->description() + ")"; }

  std::atomic<int64_t> device_rows{0};
  std::atomic<int64_t> masked_rows{0};
  std::atomic<int64_t> masked_verification_rows{0};  // of sequences fed drafts

 private:
  std::unique_ptr<ForwardBackend> inner_;
};

}  // namespace jisu::testing
