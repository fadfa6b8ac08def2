// Compares Sampler::Distribution against tests/data/sampling/distributions.json: distributions
// produced by transformers' logits processors (tools/make_sampling_fixtures.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "sampling/sampler.h"
#include "tests/test_paths.h"

namespace jisu {
namespace {

nlohmann::json LoadFixture(const std::string& name) {
  std::ifstream in(jisu::testing::TestDataPath("sampling/" + name));
  if (!in) return nullptr;
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

std::vector<float> Logits(const nlohmann::json& j) {
  std::vector<float> out;
  for (const auto& v : j) {
    out.push_back(v.is_string() ? -std::numeric_limits<float>::infinity()
                                : static_cast<float>(v.get<double>()));
  }
  return out;
}

SamplingParams Params(const nlohmann::json& j) {
  SamplingParams p;
  p.temperature = static_cast<float>(j["temperature"].get<double>());
  p.top_k = j["top_k"].get<int32_t>();
  p.top_p = static_cast<float>(j["top_p"].get<double>());
  p.min_p = static_cast<float>(j["min_p"].get<double>());
  p.repetition_penalty = static_cast<float>(j["repetition_penalty"].get<double>());
  p.frequency_penalty = static_cast<float>(j["frequency_penalty"].get<double>());
  p.presence_penalty = static_cast<float>(j["presence_penalty"].get<double>());
  p.seed = 7;
  return p;
}

TEST(SamplerFixtureTest, MatchesTransformersLogitsProcessors) {
  const nlohmann::json fixture = LoadFixture("distributions.json");
  ASSERT_TRUE(fixture.is_object()) << "missing or malformed distributions.json";
  const auto& cases = fixture["cases"];
  ASSERT_GE(cases.size(), 100u);
  int greedy_cases = 0, filtered_cases = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>() + " " + c["params"].dump());
    const SamplingParams params = Params(c["params"]);
    ASSERT_TRUE(params.Validate().ok());
    std::vector<float> logits = Logits(c["logits"]);
    ASSERT_EQ(logits.size(), c["vocab"].get<size_t>());
    const std::vector<int32_t> prompt = c["prompt"].get<std::vector<int32_t>>();
    const std::vector<int32_t> generated = c["generated"].get<std::vector<int32_t>>();
    const int32_t vocab = static_cast<int32_t>(logits.size());

    Sampler sampler(params);
    std::vector<float> work = logits;
    auto dist_span = sampler.Distribution(work.data(), vocab, prompt, generated);
    std::vector<TokenProb> dist(dist_span.begin(), dist_span.end());
    std::sort(dist.begin(), dist.end(),
              [](const TokenProb& a, const TokenProb& b) { return a.id < b.id; });

    if (c.contains("greedy")) {
      ++greedy_cases;
      ASSERT_EQ(dist.size(), 1u);
      EXPECT_EQ(dist[0].id, c["greedy"].get<int32_t>());
      EXPECT_EQ(dist[0].prob, 1.0f);
    } else {
      ++filtered_cases;
      const auto& survivors = c["survivors"];
      ASSERT_EQ(dist.size(), survivors.size());
      double sum = 0.0;
      for (size_t i = 0; i < dist.size(); ++i) {
        const int32_t id = survivors[i][0].get<int32_t>();
        const double ref = survivors[i][1].get<double>();
        ASSERT_EQ(dist[i].id, id) << "survivor #" << i;
        EXPECT_NEAR(dist[i].prob, ref, 2e-7 + 1e-4 * ref) << "token " << id;
        sum += dist[i].prob;
      }
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }

    // Sample draws from that same distribution.
    Sampler sampler2(params);
    work = logits;
    const int32_t token = sampler2.Sample(work.data(), vocab, prompt, generated);
    EXPECT_TRUE(std::any_of(dist.begin(), dist.end(),
                            [&](const TokenProb& t) { return t.id == token && t.prob > 0; }))
        << "sampled " << token;
  }
  EXPECT_GE(greedy_cases, 10);
  EXPECT_GE(filtered_cases, 90);
}

}  // namespace
}  // namespace jisu
