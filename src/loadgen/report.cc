#include "loadgen/report.h"

#include <cstdarg>
#include <cstdio>

namespace jisu::loadgen {
namespace {

nlohmann::json SummaryJson(const Summary& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"min", s.min}, {"max", s.max},
          {"p50", s.p50},     {"p90", s.p90},   {"p99", s.p99}};
}

}  // namespace

Report BuildReport(const std::vector<RequestResult>& results, double wall_s, const Slo& slo) {
  Report rep;
  rep.slo = slo;
  rep.wall_s = wall_s;
  rep.started = results.size();
  rep.usage_reported = true;
  rep.prompt_tokens_known = true;
  std::vector<double> ttft, tpot, itl, e2e;
  for (const RequestResult& r : results) {
    if (!r.ok()) {
      ++rep.failed;
      ++rep.errors[ErrorKey(r)];
      if (rep.first_error.empty()) rep.first_error = ErrorKey(r) + ": " + r.error_message;
      continue;
    }
    ++rep.completed;
    if (r.cls >= 0 && r.cls < kNumClasses) ++rep.completed_by_class[static_cast<size_t>(r.cls)];
    const int64_t out = r.output_tokens();
    rep.output_tokens += out;
    if (r.usage_completion_tokens < 0) rep.usage_reported = false;
    if (r.prompt_tokens >= 0) {
      rep.input_tokens += r.prompt_tokens;
    } else {
      rep.prompt_tokens_known = false;
    }
    if (r.cached_tokens > 0) rep.cached_tokens += r.cached_tokens;
    e2e.push_back(r.e2e_s * 1e3);
    double ttft_ms = -1, tpot_ms = 0;
    if (r.ttft_s >= 0) {
      ttft_ms = r.ttft_s * 1e3;
      ttft.push_back(ttft_ms);
    }
    if (out > 1 && r.ttft_s >= 0) {
      tpot_ms = (r.e2e_s - r.ttft_s) * 1e3 / static_cast<double>(out - 1);
      tpot.push_back(tpot_ms);
    }
    for (size_t k = 1; k < r.chunk_s.size(); ++k) {
      itl.push_back((r.chunk_s[k] - r.chunk_s[k - 1]) * 1e3);
    }
    // A request with no output at all met no TTFT.
    if (ttft_ms >= 0 && ttft_ms <= slo.ttft_ms && tpot_ms <= slo.tpot_ms) ++rep.good;
  }
  if (rep.completed == 0) {
    rep.usage_reported = false;
    rep.prompt_tokens_known = false;
  }
  if (wall_s > 0) {
    rep.request_throughput = static_cast<double>(rep.completed) / wall_s;
    rep.input_token_throughput = static_cast<double>(rep.input_tokens) / wall_s;
    rep.output_token_throughput = static_cast<double>(rep.output_tokens) / wall_s;
    rep.goodput = static_cast<double>(rep.good) / wall_s;
  }
  rep.ttft_ms = Summarize(std::move(ttft));
  rep.tpot_ms = Summarize(std::move(tpot));
  rep.itl_ms = Summarize(std::move(itl));
  rep.e2e_ms = Summarize(std::move(e2e));
  return rep;
}

namespace {

// snprintf into a string, its format checked at each call like printf's.
__attribute__((format(printf, 2, 3))) void AppendF(std::string& out, const char* fmt, ...) {
  char buf[256];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  out += buf;
}

}  // namespace

std::string FormatReport(const Report& r) {
  std::string s;
  AppendF(s, "requests: %zu completed, %zu failed, %zu not started (duration) in %.2f s\n",
          r.completed, r.failed, r.not_started, r.wall_s);
  AppendF(s, "  by class: chat %zu, summarize %zu, code %zu\n", r.completed_by_class[0],
          r.completed_by_class[1], r.completed_by_class[2]);
  AppendF(s, "request throughput: %.3f req/s\n", r.request_throughput);
  if (r.prompt_tokens_known) {
    AppendF(s, "input tokens: %lld (%.1f tok/s), cached %lld\n",
            static_cast<long long>(r.input_tokens), r.input_token_throughput,
            static_cast<long long>(r.cached_tokens));
  } else {
    AppendF(s, "input tokens: not reported by the server\n");
  }
  AppendF(s, "output tokens: %lld (%.1f tok/s)%s\n", static_cast<long long>(r.output_tokens),
          r.output_token_throughput, r.usage_reported ? "" : " [counted as content chunks]");
  AppendF(s, "goodput (TTFT <= %.0f ms, TPOT <= %.0f ms): %.3f req/s (%zu of %zu)\n", r.slo.ttft_ms,
          r.slo.tpot_ms, r.goodput, r.good, r.completed);
  AppendF(s, "%-10s %10s %10s %10s %10s %10s\n", "ms", "mean", "p50", "p90", "p99", "max");
  auto row = [&](const char* name, const Summary& m) {
    AppendF(s, "%-10s %10.2f %10.2f %10.2f %10.2f %10.2f\n", name, m.mean, m.p50, m.p90, m.p99,
            m.max);
  };
  row("TTFT", r.ttft_ms);
  row("TPOT", r.tpot_ms);
  row("ITL", r.itl_ms);
  row("E2E", r.e2e_ms);
  if (!r.errors.empty()) {
    s += "errors:";
    for (const auto& [k, v] : r.errors) s += " " + k + "=" + std::to_string(v);
    s += "\n  first: " + r.first_error + "\n";
  }
  return s;
}

nlohmann::json ReportToJson(const Report& r) {
  nlohmann::json j;
  j["completed"] = r.completed;
  j["failed"] = r.failed;
  j["started"] = r.started;
  j["not_started"] = r.not_started;
  j["errors"] = r.errors;
  j["first_error"] = r.first_error;
  j["duration_s"] = r.wall_s;
  j["request_throughput"] = r.request_throughput;
  j["input_token_throughput"] = r.input_token_throughput;
  j["output_token_throughput"] = r.output_token_throughput;
  j["input_tokens"] = r.input_tokens;
  j["output_tokens"] = r.output_tokens;
  j["cached_tokens"] = r.cached_tokens;
  j["usage_reported"] = r.usage_reported;
  j["prompt_tokens_known"] = r.prompt_tokens_known;
  j["goodput"] = r.goodput;
  j["good_requests"] = r.good;
  j["slo"] = {{"ttft_ms", r.slo.ttft_ms}, {"tpot_ms", r.slo.tpot_ms}};
  j["completed_by_class"] = {{"chat", r.completed_by_class[0]},
                             {"summarize", r.completed_by_class[1]},
                             {"code", r.completed_by_class[2]}};
  j["ttft_ms"] = SummaryJson(r.ttft_ms);
  j["tpot_ms"] = SummaryJson(r.tpot_ms);
  j["itl_ms"] = SummaryJson(r.itl_ms);
  j["e2e_ms"] = SummaryJson(r.e2e_ms);
  return j;
}

}  // namespace jisu::loadgen
