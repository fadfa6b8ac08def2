// logit_bias against transformers' SequenceBiasLogitsProcessor followed by the usual processors
// (tests/data/sampling/logit_bias.json, tools/make_logit_bias_fixtures.py), and its checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "sampling/sampler.h"
#include "tests/test_paths.h"

namespace jisu {
namespace {

TEST(LogitBiasTest, MatchesTransformersSequenceBias) {
  std::ifstream in(jisu::testing::TestDataPath("sampling/logit_bias.json"));
  const nlohmann::json f = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(f.is_object());
  int greedy = 0, filtered = 0;
  for (const auto& c : f["cases"]) {
    SCOPED_TRACE(c["params"].dump() + " bias " + c["logit_bias"].dump());
    SamplingParams p;
    const auto& j = c["params"];
    p.temperature = j["temperature"].get<float>();
    p.top_k = j["top_k"].get<int32_t>();
    p.top_p = j["top_p"].get<float>();
    p.min_p = j["min_p"].get<float>();
    p.repetition_penalty = j["repetition_penalty"].get<float>();
    p.frequency_penalty = j["frequency_penalty"].get<float>();
    p.presence_penalty = j["presence_penalty"].get<float>();
    for (const auto& b : c["logit_bias"])
      p.logit_bias.emplace_back(b[0].get<int32_t>(), b[1].get<float>());
    ASSERT_TRUE(p.Validate().ok());
    std::vector<float> logits;
    for (const auto& v : c["logits"]) logits.push_back(v.get<float>());
    const auto prompt = c["prompt"].get<std::vector<int32_t>>();
    const auto generated = c["generated"].get<std::vector<int32_t>>();
    Sampler s(p);
    auto span =
        s.Distribution(logits.data(), static_cast<int32_t>(logits.size()), prompt, generated);
    std::vector<TokenProb> dist(span.begin(), span.end());
    std::sort(dist.begin(), dist.end(), [](auto& a, auto& b) { return a.id < b.id; });
    if (c.contains("greedy")) {
      ++greedy;
      ASSERT_EQ(dist.size(), 1u);
      EXPECT_EQ(dist[0].id, c["greedy"].get<int32_t>());
    } else {
      ++filtered;
      const auto& want = c["survivors"];
      ASSERT_EQ(dist.size(), want.size());
      for (size_t i = 0; i < dist.size(); ++i) {
        EXPECT_EQ(dist[i].id, want[i][0].get<int32_t>());
        const double ref = want[i][1].get<double>();
        EXPECT_NEAR(dist[i].prob, ref, 2e-7 + 1e-4 * ref);
      }
    }
  }
  EXPECT_GE(greedy, 5);
  EXPECT_GE(filtered, 40);
}

TEST(LogitBiasTest, ValidateChecksRangesAndCount) {
  SamplingParams p;
  p.logit_bias = {{3, 100.0f}, {4, -100.0f}};
  EXPECT_TRUE(p.Validate().ok());
  p.logit_bias = {{3, 100.5f}};
  EXPECT_FALSE(p.Validate().ok());
  p.logit_bias = {{-1, 1.0f}};
  EXPECT_FALSE(p.Validate().ok());
  p.logit_bias.assign(SamplingParams::kMaxLogitBias + 1, {1, 1.0f});
  EXPECT_FALSE(p.Validate().ok());
}

}  // namespace
}  // namespace jisu
