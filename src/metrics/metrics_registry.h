// An in-process metrics registry: counters, gauges and fixed-bucket histograms, optionally
// labelled, exported in the Prometheus text exposition format 0.0.4 (what GET /metrics serves).
//
// Cost model: registering a family or a new label combination allocates and takes the
// registry's lock; both happen at start-up (or the first time a label value is seen). Updating a
// metric is a few relaxed atomic operations, no lock and no allocation, so the engine loop can
// update metrics every step. Callers keep the Counter* / Gauge* / Histogram* they get back:
// they stay valid for the registry's lifetime.
//
// Export reads the atomics without stopping writers: each sample is exact, a scrape that races
// an update may see one histogram's _sum a step ahead of its buckets. _count always equals the
// +Inf bucket (both come from the same bucket snapshot).
//
// Names are programmer-chosen constants: an invalid metric or label name, a family registered
// twice with a different type, help or label names, or a wrong number of label values is a
// programming error and aborts with a message (never triggered by external input).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace jisu {

enum class MetricType { kCounter, kGauge, kHistogram };

class Counter {
 public:
  void Inc(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }  // v >= 0
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `bounds`: strictly increasing finite upper bounds; the +Inf bucket is implicit.
  explicit Histogram(const std::vector<double>* bounds);
  void Observe(double v);

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;
  const std::vector<double>& bounds() const { return *bounds_; }

 private:
  const std::vector<double>* bounds_;                // owned by the family
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, not cumulative; +Inf last
  std::atomic<double> sum_{0};
};

// Bucket helpers: `count` bounds start, start*factor, ... / start, start+width, ...
std::vector<double> ExponentialBuckets(double start, double factor, int count);
std::vector<double> LinearBuckets(double start, double width, int count);

class MetricsRegistry {
 public:
  template <class M>
  class Family;

  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Unlabelled metrics (a family with one child). Registering the same name again with the
  // same type, help (and bounds) returns the same metric.
  Counter* AddCounter(std::string_view name, std::string_view help);
  Gauge* AddGauge(std::string_view name, std::string_view help);
  Histogram* AddHistogram(std::string_view name, std::string_view help, std::vector<double> bounds);

  // Labelled families: children are created by Family::WithLabels (which allocates the first
  // time a combination is seen; cache the pointer).
  Family<Counter>* AddCounterFamily(std::string_view name, std::string_view help,
                                    std::vector<std::string> label_names);
  Family<Gauge>* AddGaugeFamily(std::string_view name, std::string_view help,
                                std::vector<std::string> label_names);
  Family<Histogram>* AddHistogramFamily(std::string_view name, std::string_view help,
                                        std::vector<std::string> label_names,
                                        std::vector<double> bounds);

  // Prometheus text format 0.0.4: families in registration order, children in creation order.
  std::string TextExposition() const;
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

  static bool IsValidMetricName(std::string_view name);
  static bool IsValidLabelName(std::string_view name);

 private:
  struct FamilyBase;
  FamilyBase* Register(std::string_view name, std::string_view help, MetricType type,
                       std::vector<std::string> label_names, std::vector<double> bounds);

  mutable std::mutex mu_;  // guards families_ (not the metric values)
  std::vector<std::unique_ptr<FamilyBase>> families_;
};

// One metric family: name, help, type, label names and its children (one per label values).
struct MetricsRegistry::FamilyBase {
  virtual ~FamilyBase() = default;
  std::string name, help;
  MetricType type = MetricType::kCounter;
  std::vector<std::string> label_names;
  std::vector<double> bounds;                          // histograms only
  mutable std::mutex mu;                               // guards the children list (not the values)
  std::vector<std::vector<std::string>> label_values;  // per child, in creation order
  virtual void AppendSamples(std::string* out) const = 0;
};

template <class M>
class MetricsRegistry::Family final : public MetricsRegistry::FamilyBase {
 public:
  // The child for these label values (one per label name), created on first use.
  M* WithLabels(const std::vector<std::string>& values);
  void AppendSamples(std::string* out) const override;

 private:
  std::vector<std::unique_ptr<M>> children_;  // parallel to label_values
};

// Escapes for the text format: label values escape \ " and newline; HELP escapes \ and newline.
std::string EscapeLabelValue(std::string_view v);
std::string EscapeHelp(std::string_view v);
// Sample value formatting: shortest round-trip decimal, +Inf / -Inf / NaN.
std::string FormatMetricValue(double v);

}  // namespace jisu
