#include "metrics/metrics_registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace jisu {
namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "metrics registry: %s\n", message.c_str());
  std::abort();
}

const char* TypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// `name{l1="v1",l2="v2"[,extra]} value\n`
void AppendSample(std::string* out, std::string_view name, const std::vector<std::string>& names,
                  const std::vector<std::string>& values, std::string_view extra_label,
                  std::string_view extra_value, double v) {
  out->append(name);
  if (!names.empty() || !extra_label.empty()) {
    out->push_back('{');
    bool first = true;
    for (size_t i = 0; i < names.size(); ++i) {
      if (!first) out->push_back(',');
      first = false;
      out->append(names[i]).append("=\"").append(EscapeLabelValue(values[i])).push_back('"');
    }
    if (!extra_label.empty()) {
      if (!first) out->push_back(',');
      out->append(extra_label).append("=\"").append(extra_value).push_back('"');
    }
    out->push_back('}');
  }
  out->push_back(' ');
  out->append(FormatMetricValue(v));
  out->push_back('\n');
}

}  // namespace

Histogram::Histogram(const std::vector<double>* bounds)
    : bounds_(bounds), counts_(new std::atomic<uint64_t>[bounds->size() + 1]) {
  for (size_t i = 0; i <= bounds->size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  // Bucket i counts values in (bounds[i-1], bounds[i]]; NaN lands in +Inf.
  size_t i = bounds_->size();
  if (!std::isnan(v)) {
    i = static_cast<size_t>(std::lower_bound(bounds_->begin(), bounds_->end(), v) -
                            bounds_->begin());
  }
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.cumulative.resize(bounds_->size() + 1);
  uint64_t acc = 0;
  for (size_t i = 0; i <= bounds_->size(); ++i) {
    acc += counts_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = acc;
  }
  s.count = acc;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> b;
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) b.push_back(v);
  return b;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  std::vector<double> b;
  for (int i = 0; i < count; ++i) b.push_back(start + width * i);
  return b;
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string FormatMetricValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

bool MetricsRegistry::IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool MetricsRegistry::IsValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__") || name == "le") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

template <class M>
M* MetricsRegistry::Family<M>::WithLabels(const std::vector<std::string>& values) {
  if (values.size() != label_names.size()) {
    Die(name + ": " + std::to_string(values.size()) + " label values for " +
        std::to_string(label_names.size()) + " labels");
  }
  std::lock_guard<std::mutex> lock(mu);
  for (size_t i = 0; i < label_values.size(); ++i) {
    if (label_values[i] == values) return children_[i].get();
  }
  label_values.push_back(values);
  if constexpr (std::is_same_v<M, Histogram>) {
    children_.push_back(std::make_unique<Histogram>(&bounds));
  } else {
    children_.push_back(std::make_unique<M>());
  }
  return children_.back().get();
}

template <class M>
void MetricsRegistry::Family<M>::AppendSamples(std::string* out) const {
  std::lock_guard<std::mutex> lock(mu);
  for (size_t c = 0; c < children_.size(); ++c) {
    const std::vector<std::string>& values = label_values[c];
    if constexpr (std::is_same_v<M, Histogram>) {
      const Histogram::Snapshot s = children_[c]->Read();
      const std::string bucket = name + "_bucket";
      for (size_t i = 0; i < bounds.size(); ++i) {
        AppendSample(out, bucket, label_names, values, "le", FormatMetricValue(bounds[i]),
                     static_cast<double>(s.cumulative[i]));
      }
      AppendSample(out, bucket, label_names, values, "le", "+Inf",
                   static_cast<double>(s.cumulative.back()));
      AppendSample(out, name + "_sum", label_names, values, "", "", s.sum);
      AppendSample(out, name + "_count", label_names, values, "", "", static_cast<double>(s.count));
    } else {
      AppendSample(out, name, label_names, values, "", "", children_[c]->value());
    }
  }
}

template class MetricsRegistry::Family<Counter>;
template class MetricsRegistry::Family<Gauge>;
template class MetricsRegistry::Family<Histogram>;

MetricsRegistry::FamilyBase* MetricsRegistry::Register(std::string_view name, std::string_view help,
                                                       MetricType type,
                                                       std::vector<std::string> label_names,
                                                       std::vector<double> bounds) {
  if (!IsValidMetricName(name)) Die("invalid metric name '" + std::string(name) + "'");
  for (const std::string& l : label_names) {
    if (!IsValidLabelName(l)) Die(std::string(name) + ": invalid label name '" + l + "'");
  }
  if (type == MetricType::kHistogram) {
    for (size_t i = 0; i < bounds.size(); ++i) {
      if (!std::isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1])) {
        Die(std::string(name) + ": histogram bounds must be finite and strictly increasing");
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : families_) {
    if (f->name != name) continue;
    if (f->type != type || f->help != help || f->label_names != label_names ||
        f->bounds != bounds) {
      Die(std::string(name) + " registered twice with different definitions");
    }
    return f.get();
  }
  std::unique_ptr<FamilyBase> f;
  switch (type) {
    case MetricType::kCounter:
      f = std::make_unique<Family<Counter>>();
      break;
    case MetricType::kGauge:
      f = std::make_unique<Family<Gauge>>();
      break;
    case MetricType::kHistogram:
      f = std::make_unique<Family<Histogram>>();
      break;
  }
  f->name = std::string(name);
  f->help = std::string(help);
  f->type = type;
  f->label_names = std::move(label_names);
  f->bounds = std::move(bounds);
  families_.push_back(std::move(f));
  return families_.back().get();
}

Counter* MetricsRegistry::AddCounter(std::string_view name, std::string_view help) {
  return AddCounterFamily(name, help, {})->WithLabels({});
}
Gauge* MetricsRegistry::AddGauge(std::string_view name, std::string_view help) {
  return AddGaugeFamily(name, help, {})->WithLabels({});
}
Histogram* MetricsRegistry::AddHistogram(std::string_view name, std::string_view help,
                                         std::vector<double> bounds) {
  return AddHistogramFamily(name, help, {}, std::move(bounds))->WithLabels({});
}

MetricsRegistry::Family<Counter>* MetricsRegistry::AddCounterFamily(
    std::string_view name, std::string_view help, std::vector<std::string> label_names) {
  return static_cast<Family<Counter>*>(
      Register(name, help, MetricType::kCounter, std::move(label_names), {}));
}
MetricsRegistry::Family<Gauge>* MetricsRegistry::AddGaugeFamily(
    std::string_view name, std::string_view help, std::vector<std::string> label_names) {
  return static_cast<Family<Gauge>*>(
      Register(name, help, MetricType::kGauge, std::move(label_names), {}));
}
MetricsRegistry::Family<Histogram>* MetricsRegistry::AddHistogramFamily(
    std::string_view name, std::string_view help, std::vector<std::string> label_names,
    std::vector<double> bounds) {
  return static_cast<Family<Histogram>*>(
      Register(name, help, MetricType::kHistogram, std::move(label_names), std::move(bounds)));
}

std::string MetricsRegistry::TextExposition() const {
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : families_) {
    out.append("# HELP ").append(f->name).push_back(' ');
    out.append(EscapeHelp(f->help)).push_back('\n');
    out.append("# TYPE ").append(f->name).push_back(' ');
    out.append(TypeName(f->type)).push_back('\n');
    f->AppendSamples(&out);
  }
  return out;
}

}  // namespace jisu
