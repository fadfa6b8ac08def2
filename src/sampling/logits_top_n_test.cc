#include "sampling/logits_top_n.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "sampling/sampler.h"
#include "tests/test_paths.h"

namespace jisu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// References from torch.log_softmax / torch.topk (tools/make_sampling_fixtures.py).
TEST(LogitsTopNTest, MatchesTorchLogSoftmaxAndTopk) {
  std::ifstream in(jisu::testing::TestDataPath("sampling/logprobs.json"));
  ASSERT_TRUE(in) << "missing logprobs.json";
  const nlohmann::json fixture = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(fixture.is_object());
  int checked = 0;
  for (const auto& c : fixture["cases"]) {
    const std::vector<float> logits = c["logits"].get<std::vector<float>>();
    const int32_t vocab = static_cast<int32_t>(logits.size());
    const int32_t n = c["n"].get<int32_t>();
    SCOPED_TRACE(::testing::Message() << "vocab " << vocab << " n " << n);

    std::vector<float> ls(vocab);
    Sampler::LogSoftmax(logits.data(), vocab, ls.data());
    const std::vector<double> want_ls = c["log_softmax"].get<std::vector<double>>();
    for (int32_t i = 0; i < vocab; ++i) ASSERT_NEAR(ls[i], want_ls[i], 2e-6) << i;

    std::vector<TokenLogprob> top;
    LogitsTopN(logits.data(), vocab, n, &top);
    const auto ids = c["top_ids"].get<std::vector<int32_t>>();
    const auto lps = c["top_logprobs"].get<std::vector<double>>();
    ASSERT_EQ(top.size(), ids.size());
    for (size_t r = 0; r < top.size(); ++r) {
      EXPECT_EQ(top[r].id, ids[r]) << "rank " << r;
      EXPECT_NEAR(top[r].logprob, lps[r], 2e-6) << "rank " << r;
      EXPECT_NEAR(top[r].logprob, logits[top[r].id] - LogSumExp(logits.data(), vocab), 1e-6);
    }
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

TEST(LogitsTopNTest, TiesNanInfAndSizes) {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, std::nanf(""), -kInf, 2.0f};
  std::vector<TokenLogprob> top;
  LogitsTopN(logits.data(), 6, 3, &top);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].id, 1);  // tie: lower id first
  EXPECT_EQ(top[1].id, 2);
  EXPECT_EQ(top[2].id, 5);
  const double lse = std::log(std::exp(1.0) + 2 * std::exp(3.0) + std::exp(2.0));
  EXPECT_NEAR(top[0].logprob, 3.0 - lse, 1e-6);
  EXPECT_NEAR(top[2].logprob, 2.0 - lse, 1e-6);

  LogitsTopN(logits.data(), 6, 100, &top);  // n > vocab: everything, NaN and -inf last
  ASSERT_EQ(top.size(), 6u);
  EXPECT_EQ(top[3].id, 0);
  EXPECT_EQ(top[4].logprob, -kInf);
  EXPECT_EQ(top[5].logprob, -kInf);

  LogitsTopN(logits.data(), 6, 0, &top);
  EXPECT_TRUE(top.empty());
  LogitsTopN(logits.data(), 6, -5, &top);
  EXPECT_TRUE(top.empty());

  const std::vector<float> inf = {0.0f, kInf, kInf};
  LogitsTopN(inf.data(), 3, 3, &top);
  EXPECT_NEAR(top[0].logprob, -std::log(2.0), 1e-6);
  EXPECT_EQ(top[2].logprob, -kInf);
  EXPECT_EQ(LogSumExp(inf.data(), 3), kInf);
  const std::vector<float> none = {-kInf, -kInf};
  EXPECT_EQ(LogSumExp(none.data(), 2), -kInf);
}

TEST(LogitsTopNTest, ReusesOutputStorage) {
  std::vector<float> logits(10000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i));
  std::vector<TokenLogprob> top;
  LogitsTopN(logits.data(), 10000, 20, &top);
  const TokenLogprob* data = top.data();
  for (int i = 0; i < 3; ++i) {
    LogitsTopN(logits.data(), 10000, 20, &top);
    EXPECT_EQ(top.data(), data);
  }
  for (size_t r = 1; r < top.size(); ++r) EXPECT_GE(top[r - 1].logprob, top[r].logprob);
}

}  // namespace
}  // namespace jisu
