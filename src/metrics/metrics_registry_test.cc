#include "metrics/metrics_registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

namespace jisu {
namespace {

TEST(MetricsRegistry, ExactTextOfASmallRegistry) {
  MetricsRegistry reg;
  Counter* c = reg.AddCounter("jisu:requests_total", "Requests.\nSecond line with a \\.");
  Gauge* g = reg.AddGauge("vllm:num_requests_running", "Running requests.");
  auto* fam = reg.AddCounterFamily("jisu:finished_total", "Finished requests by reason.",
                                   {"finished_reason", "model"});
  Histogram* h = reg.AddHistogram("jisu:latency_seconds", "Latency.", {0.25, 1, 2.5});
  c->Inc();
  c->Inc(2);
  g->Set(3);
  g->Add(-1.5);
  fam->WithLabels({"stop", "tiny"})->Inc(4);
  fam->WithLabels({"length", "a\"b\\c\nd"})->Inc();
  fam->WithLabels({"stop", "tiny"})->Inc();  // same child
  h->Observe(0.125);
  h->Observe(0.25);  // le is inclusive
  h->Observe(2);
  h->Observe(7);
  EXPECT_EQ(reg.TextExposition(),
            "# HELP jisu:requests_total Requests.\\nSecond line with a \\\\.\n"
            "# TYPE jisu:requests_total counter\n"
            "jisu:requests_total 3\n"
            "# HELP vllm:num_requests_running Running requests.\n"
            "# TYPE vllm:num_requests_running gauge\n"
            "vllm:num_requests_running 1.5\n"
            "# HELP jisu:finished_total Finished requests by reason.\n"
            "# TYPE jisu:finished_total counter\n"
            "jisu:finished_total{finished_reason=\"stop\",model=\"tiny\"} 5\n"
            "jisu:finished_total{finished_reason=\"length\",model=\"a\\\"b\\\\c\\nd\"} 1\n"
            "# HELP jisu:latency_seconds Latency.\n"
            "# TYPE jisu:latency_seconds histogram\n"
            "jisu:latency_seconds_bucket{le=\"0.25\"} 2\n"
            "jisu:latency_seconds_bucket{le=\"1\"} 2\n"
            "jisu:latency_seconds_bucket{le=\"2.5\"} 3\n"
            "jisu:latency_seconds_bucket{le=\"+Inf\"} 4\n"
            "jisu:latency_seconds_sum 9.375\n"
            "jisu:latency_seconds_count 4\n");
}

TEST(MetricsRegistry, LabelledHistogramPutsLeLast) {
  MetricsRegistry reg;
  auto* fam = reg.AddHistogramFamily("h", "H.", {"tenant"}, {1});
  fam->WithLabels({"7"})->Observe(0.5);
  EXPECT_EQ(reg.TextExposition(),
            "# HELP h H.\n# TYPE h histogram\n"
            "h_bucket{tenant=\"7\",le=\"1\"} 1\n"
            "h_bucket{tenant=\"7\",le=\"+Inf\"} 1\n"
            "h_sum{tenant=\"7\"} 0.5\n"
            "h_count{tenant=\"7\"} 1\n");
}

TEST(MetricsRegistry, ReRegisteringReturnsTheSameMetric) {
  MetricsRegistry reg;
  Counter* a = reg.AddCounter("x_total", "X.");
  Counter* b = reg.AddCounter("x_total", "X.");
  EXPECT_EQ(a, b);
}

TEST(MetricsRegistry, ConflictingDefinitionsAbort) {
  EXPECT_DEATH(
      {
        MetricsRegistry reg;
        reg.AddCounter("x_total", "X.");
        reg.AddGauge("x_total", "X.");
      },
      "registered twice");
  EXPECT_DEATH(
      {
        MetricsRegistry reg;
        reg.AddCounter("bad name", "X.");
      },
      "invalid metric name");
  EXPECT_DEATH(
      {
        MetricsRegistry reg;
        reg.AddCounterFamily("x", "X.", {"a"})->WithLabels({});
      },
      "label values");
  EXPECT_DEATH(
      {
        MetricsRegistry reg;
        reg.AddHistogram("x", "X.", {1, 1});
      },
      "strictly increasing");
}

TEST(MetricsRegistry, NameValidation) {
  EXPECT_TRUE(MetricsRegistry::IsValidMetricName("vllm:num_requests_running"));
  EXPECT_TRUE(MetricsRegistry::IsValidMetricName("_a1"));
  EXPECT_FALSE(MetricsRegistry::IsValidMetricName("1a"));
  EXPECT_FALSE(MetricsRegistry::IsValidMetricName("a-b"));
  EXPECT_FALSE(MetricsRegistry::IsValidMetricName(""));
  EXPECT_TRUE(MetricsRegistry::IsValidLabelName("tenant"));
  EXPECT_FALSE(MetricsRegistry::IsValidLabelName("a:b"));
  EXPECT_FALSE(MetricsRegistry::IsValidLabelName("__name"));
  EXPECT_FALSE(MetricsRegistry::IsValidLabelName("le"));
}

TEST(MetricsRegistry, ValueFormatting) {
  EXPECT_EQ(FormatMetricValue(0), "0");
  EXPECT_EQ(FormatMetricValue(42), "42");
  EXPECT_EQ(FormatMetricValue(0.1), "0.1");
  EXPECT_EQ(FormatMetricValue(1e-6), "1e-06");
  EXPECT_EQ(FormatMetricValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatMetricValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(FormatMetricValue(std::nan("")), "NaN");
}

TEST(MetricsRegistry, BucketHelpers) {
  EXPECT_EQ(ExponentialBuckets(0.001, 2, 4), (std::vector<double>{0.001, 0.002, 0.004, 0.008}));
  EXPECT_EQ(LinearBuckets(1, 2, 3), (std::vector<double>{1, 3, 5}));
}

TEST(MetricsRegistry, ConcurrentUpdatesAreNotLost) {
  MetricsRegistry reg;
  Counter* c = reg.AddCounter("c_total", "C.");
  Histogram* h = reg.AddHistogram("h", "H.", {0.5});
  auto* fam = reg.AddGaugeFamily("g", "G.", {"t"});
  constexpr int kThreads = 4, kIters = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Gauge* g = fam->WithLabels({std::to_string(t % 2)});
      for (int i = 0; i < kIters; ++i) {
        c->Inc();
        h->Observe(i % 2 ? 1.0 : 0.25);
        g->Add(1);
        if (i % 1000 == 0) (void)reg.TextExposition();  // scrapes race the updates
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(c->value(), kThreads * kIters);
  Histogram::Snapshot s = h->Read();
  EXPECT_EQ(s.count, uint64_t{kThreads * kIters});
  EXPECT_EQ(s.cumulative[0], uint64_t{kThreads * kIters / 2});
  EXPECT_DOUBLE_EQ(s.sum, kThreads * kIters / 2 * 1.25);
  EXPECT_EQ(fam->WithLabels({"0"})->value() + fam->WithLabels({"1"})->value(), kThreads * kIters);
}

}  // namespace
}  // namespace jisu
