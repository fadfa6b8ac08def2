#include "jisu/request_options.h"

#include <gtest/gtest.h>

namespace jisu {
namespace {

TEST(RequestOptions, NamesRoundTrip) {
  for (MatmulPath p : {MatmulPath::kAuto, MatmulPath::kFloat, MatmulPath::kInt8}) {
    EXPECT_EQ(*ParseMatmulPath(MatmulPathName(p)), p);
  }
  for (SamplingPlacement p :
       {SamplingPlacement::kAuto, SamplingPlacement::kDevice, SamplingPlacement::kHost}) {
    EXPECT_EQ(*ParseSamplingPlacement(SamplingPlacementName(p)), p);
  }
  for (AttentionVariant v : {AttentionVariant::kAuto, AttentionVariant::kDense}) {
    EXPECT_EQ(*ParseAttentionVariant(AttentionVariantName(v)), v);
  }
  const auto bad = ParseMatmulPath("fp8");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "matmul must be one of auto, float, int8 (got 'fp8')");
  EXPECT_FALSE(ParseSamplingPlacement("gpu").ok());
  EXPECT_FALSE(ParseAttentionVariant("sparse").ok());
  EXPECT_FALSE(ParseMatmulPath("Float").ok());  // names are exact
}

TEST(RequestOptions, ValidateChecksRanges) {
  RequestOptions o;
  EXPECT_TRUE(o.Validate().ok());
  for (int32_t k : {0, 1, 64}) {
    o.speculative = k;
    EXPECT_TRUE(o.Validate().ok()) << k;
  }
  for (int32_t k : {-1, 65}) {
    o.speculative = k;
    const Status s = o.Validate();
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << k;
    EXPECT_EQ(s.message().rfind("speculative ", 0), 0u) << s.message();
  }
  o = {};
  o.weights = "w8a8";
  EXPECT_TRUE(o.Validate().ok());
  o.weights = "with space";
  EXPECT_EQ(o.Validate().message().rfind("weights ", 0), 0u);
  o.weights = std::string(65, 'a');
  EXPECT_FALSE(o.Validate().ok());
}

TEST(RequestOptions, OverFillsOnlyAutoFields) {
  RequestOptions defaults;
  defaults.matmul = MatmulPath::kFloat;
  defaults.sampling = SamplingPlacement::kHost;
  defaults.attention = AttentionVariant::kDense;
  defaults.speculative = 3;
  const RequestOptions all_auto;
  EXPECT_EQ(all_auto.Over(defaults), defaults);
  RequestOptions mine;
  mine.matmul = MatmulPath::kInt8;
  mine.speculative = 0;  // off is a choice, not auto
  const RequestOptions r = mine.Over(defaults);
  EXPECT_EQ(r.matmul, MatmulPath::kInt8);
  EXPECT_EQ(r.sampling, SamplingPlacement::kHost);
  EXPECT_EQ(r.speculative, 0);
}

TEST(RequestOptions, StepAndCacheKeys) {
  RequestOptions a, b;
  b.sampling = SamplingPlacement::kHost;  // per row: neither key changes
  b.speculative = 5;
  EXPECT_EQ(StepOptionsOf(a), StepOptionsOf(b));
  EXPECT_EQ(KvCacheKeyOf(a), KvCacheKeyOf(b));
  b.attention = AttentionVariant::kDense;  // auto attention is dense: same K/V
  EXPECT_EQ(KvCacheKeyOf(a), KvCacheKeyOf(b));
  b.matmul = MatmulPath::kFloat;  // other activation rounding: other K/V, other steps
  EXPECT_NE(StepOptionsOf(a), StepOptionsOf(b));
  EXPECT_NE(KvCacheKeyOf(a), KvCacheKeyOf(b));
  RequestOptions c;
  c.weights = "q4";
  EXPECT_NE(StepOptionsOf(a), StepOptionsOf(c));
  EXPECT_NE(KvCacheKeyOf(a), KvCacheKeyOf(c));
}

}  // namespace
}  // namespace jisu
