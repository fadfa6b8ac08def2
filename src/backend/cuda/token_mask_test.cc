// Token masks and logit_bias on the device (backend/cuda/token_mask.cu, cuda_sampling_step.cc): the
// kernels against the host's rule at vocabulary sizes that are not multiples of 32 (bits past
// the vocabulary set, rows not in the list untouched, nothing written past a row), and a step
// of the tiny model drawn on the device with masks against the same logits masked on the host:
// greedy identical, seeded draws only ever allowed tokens, in the host's proportions. Skips
// without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cuda/cuda_test_fixture.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/kernels.h"
#include "sampling/sampler.h"

namespace jisu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

bool Allowed(const std::vector<uint32_t>& masks, size_t words, size_t m, int64_t id) {
  return (masks[m * words + static_cast<size_t>(id >> 5)] >> (id & 31)) & 1u;
}

TEST(CudaTokenMaskTest, MasksAndBiasAtOddVocabSizes) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  std::mt19937 rng(9);
  for (int vocab : {1, 31, 33, 1000, 4097, 128257}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    const int rows = 5;
    const size_t words = (static_cast<size_t>(vocab) + 31) / 32;
    // Masks apply to rows 3, 0 and 4 (not in order); rows 1 and 2 keep every value.
    const std::vector<int32_t> mask_rows = {3, 0, 4};
    std::vector<uint32_t> masks(mask_rows.size() * words);
    for (size_t m = 0; m < mask_rows.size(); ++m) {
      for (size_t w = 0; w < words; ++w) {
        // Mask 2 allows everything (the bits past the vocabulary too); the others are random,
        // with the bits past the vocabulary set, which must not write past the row.
        masks[m * words + w] = m == 2 ? ~0u : static_cast<uint32_t>(rng());
      }
      if (m != 2 && vocab % 32) masks[m * words + words - 1] |= ~0u << (vocab % 32);
    }
    // One guard row after the last logits row.
    std::vector<float> logits(static_cast<size_t>(rows + 1) * vocab);
    std::uniform_real_distribution<float> value(-5, 5);
    for (float& x : logits) x = value(rng);
    const std::vector<cuda::DeviceBiasRow> bias_rows = {{1, 0, 3}, {4, 3, 1}};
    const std::vector<cuda::DeviceBiasEntry> entries = {
        {0, 1.5f}, {vocab - 1, -2.25f}, {0, 0.125f}, {vocab / 2, 3.0f}};
    std::vector<float> want = logits;
    for (const auto& b : bias_rows) {
      for (int i = b.begin; i < b.begin + b.count; ++i) {
        want[static_cast<size_t>(b.row) * vocab + entries[i].id] += entries[i].bias;
      }
    }
    for (size_t m = 0; m < mask_rows.size(); ++m) {
      for (int64_t id = 0; id < vocab; ++id) {
        if (!Allowed(masks, words, m, id))
          want[mask_rows[m] * static_cast<size_t>(vocab) + id] = kNegInf;
      }
    }
    DeviceBuffer d_logits, d_masks, d_rows, d_brows, d_entries;
    ASSERT_TRUE(d_logits.Resize(logits.size() * 4).ok());
    ASSERT_TRUE(d_masks.Resize(masks.size() * 4).ok());
    ASSERT_TRUE(d_rows.Resize(mask_rows.size() * 4).ok());
    ASSERT_TRUE(d_brows.Resize(bias_rows.size() * sizeof(bias_rows[0])).ok());
    ASSERT_TRUE(d_entries.Resize(entries.size() * sizeof(entries[0])).ok());
    ASSERT_EQ(cudaMemcpy(d_logits.get(), logits.data(), logits.size() * 4, cudaMemcpyHostToDevice),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_masks.get(), masks.data(), masks.size() * 4, cudaMemcpyHostToDevice),
              cudaSuccess);
    ASSERT_EQ(
        cudaMemcpy(d_rows.get(), mask_rows.data(), mask_rows.size() * 4, cudaMemcpyHostToDevice),
        cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_brows.get(), bias_rows.data(), bias_rows.size() * sizeof(bias_rows[0]),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_entries.get(), entries.data(), entries.size() * sizeof(entries[0]),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    cuda::LaunchAddLogitBias(d_logits.as<float>(), vocab, d_brows.as<cuda::DeviceBiasRow>(),
                             static_cast<int>(bias_rows.size()),
                             d_entries.as<cuda::DeviceBiasEntry>(), nullptr);
    cuda::LaunchApplyTokenMasks(d_logits.as<float>(), vocab, d_masks.as<uint32_t>(),
                                static_cast<int>(words), d_rows.as<int32_t>(),
                                static_cast<int>(mask_rows.size()), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> got(logits.size());
    ASSERT_EQ(cudaMemcpy(got.data(), d_logits.get(), got.size() * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
    size_t diffs = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      // Bitwise: the same additions in the same order as the host.
      if (std::memcmp(&got[i], &want[i], 4) != 0 && ++diffs <= 5) {
        ADD_FAILURE() << "row " << i / vocab << " id " << i % vocab << ": " << got[i] << " vs "
                      << want[i];
      }
    }
    EXPECT_EQ(diffs, 0u);
  }
}

// ForwardSample's fill_masks for `rows` masked rows that all get `mask`.
struct SameMask {
  const std::vector<uint32_t>& mask;
  size_t rows = 0;
  void operator()(uint32_t* masks, size_t words) const {
    ASSERT_EQ(words, mask.size());
    for (size_t r = 0; r < rows; ++r) std::copy(mask.begin(), mask.end(), masks + r * words);
  }
};

// One step of the tiny model, row 0's logits to the host, rows 1.. the same position drawn on the
// device under `mask` (and logit_bias). Host reference: logit_bias, then the mask, as
// OutputProcessor + Sampler do.
TEST_F(CudaBackendTest, DeviceMaskedDrawsEqualHostMaskedDraws) {
  auto model = Load("tiny-llama");
  ASSERT_TRUE(model);
  auto gpu = Gpu(*model, 16);
  ASSERT_TRUE(gpu && gpu->CanSample());
  const int64_t vocab = model->config().vocab_size;
  const size_t words = static_cast<size_t>((vocab + 31) / 32);
  const std::vector<int32_t> prompt = model->tokenizer().Encode("def parse(path", false);
  const std::vector<int32_t> blocks = {3, 1};
  const int64_t last = static_cast<int64_t>(prompt.size()) - 1;

  // First the unmasked logits, to build masks that forbid the model's favourites.
  std::vector<float> raw(static_cast<size_t>(vocab));
  const std::vector<int64_t> last_row = {last};
  ForwardBatch first{
      prompt, {BatchSequence{static_cast<int64_t>(prompt.size()), 0, blocks}}, last_row};
  ASSERT_TRUE(gpu->Forward(first, raw.data()).ok());
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return raw[a] > raw[b]; });
  std::mt19937 rng(4);
  // Allowed: ~1/3 of the vocabulary at random, never the top 5, always tokens 10-12th best.
  std::vector<uint32_t> mask(words, 0);
  for (int64_t id = 0; id < vocab; ++id) {
    if (rng() % 3 == 0) mask[id >> 5] |= 1u << (id & 31);
  }
  for (int i = 0; i < 5; ++i) mask[order[i] >> 5] &= ~(1u << (order[i] & 31));
  for (int i = 10; i < 13; ++i) mask[order[i] >> 5] |= 1u << (order[i] & 31);
  const std::vector<std::pair<int32_t, float>> bias = {{order[20], 2.5f}, {order[10], -0.75f}};

  constexpr int kDraws = 1000;
  SamplingParams greedy;
  greedy.temperature = 0;
  SamplingParams sampled[] = {greedy, greedy, greedy};
  sampled[0].temperature = 1.0f;
  sampled[1].temperature = 0.8f;
  sampled[1].top_k = 40;
  sampled[2].temperature = 1.2f;
  sampled[2].top_p = 0.9f;
  sampled[2].min_p = 0.02f;
  for (bool with_bias : {false, true}) {
    for (const SamplingParams& sp0 : {greedy, sampled[0], sampled[1], sampled[2]}) {
      SamplingParams sp = sp0;
      if (with_bias) sp.logit_bias = bias;
      SCOPED_TRACE(::testing::Message() << "T " << sp.temperature << " k " << sp.top_k << " p "
                                        << sp.top_p << " bias " << with_bias);
      const int per_call = sp.temperature == 0 ? 4 : 250;
      std::vector<int64_t> rows(per_call + 1, last);
      ForwardBatch batch{
          prompt, {BatchSequence{static_cast<int64_t>(prompt.size()), 0, blocks}}, rows};
      std::vector<float> logits(rows.size() * vocab);
      std::map<int32_t, int> count;
      int drawn = 0;
      for (int first = 0; first < (sp.temperature == 0 ? per_call : kDraws); first += per_call) {
        std::vector<RowSampling> sampling(rows.size());
        for (int j = 1; j <= per_call; ++j) {
          RowSampling& r = sampling[j];
          r.on_device = true;
          r.temperature = sp.temperature;
          r.top_k = sp.top_k;
          r.top_p = sp.top_p;
          r.min_p = sp.min_p;
          r.u = (first + j - 0.5) / kDraws;
          r.masked = true;
          r.logit_bias = sp.logit_bias;
        }
        const SameMask fill{mask, static_cast<size_t>(per_call)};
        std::vector<int32_t> ids(rows.size(), -1);
        Status st =
            gpu->ForwardSample(batch, sampling, FillTokenMasksFn(fill), logits.data(), ids.data());
        ASSERT_TRUE(st.ok()) << st.ToString();
        for (int j = 1; j <= per_call; ++j) {
          ++count[ids[j]];
          ++drawn;
        }
      }
      // The host: row 0's logits through OutputProcessor's order (mask, then Sampler with bias).
      std::vector<float> host(logits.begin(), logits.begin() + vocab);
      for (int64_t id = 0; id < vocab; ++id) {
        if (!Allowed(mask, words, 0, id)) host[id] = kNegInf;
      }
      Sampler sampler(sp);
      std::map<int32_t, double> prob;
      for (const TokenProb& tp :
           sampler.Distribution(host.data(), static_cast<int32_t>(vocab), {}, {})) {
        prob[tp.id] = tp.prob;
      }
      for (const auto& [id, n] : count) {
        ASSERT_TRUE(Allowed(mask, words, 0, id)) << "token " << id << " is disallowed";
        ASSERT_TRUE(prob.count(id)) << "token " << id << " is filtered out on the host";
      }
      if (sp.temperature == 0) {
        ASSERT_EQ(count.size(), 1u);
        EXPECT_EQ(count.begin()->first, prob.begin()->first);
        continue;
      }
      for (const auto& [id, p] : prob) {
        EXPECT_NEAR(count[id] / static_cast<double>(drawn), p, 2.0 / kDraws + 1e-4)
            << "token " << id;
      }
    }
  }
}

}  // namespace
}  // namespace jisu
