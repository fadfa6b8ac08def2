// Aggregate figures of a run: latency distributions, throughput, goodput under an SLO, errors
// by kind; printed as a table and written as JSON.
#pragma once

#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loadgen/request_result.h"
#include "loadgen/stats.h"
#include "loadgen/workload.h"

namespace jisu::loadgen {

struct Slo {
  double ttft_ms = 2000;
  double tpot_ms = 100;
};

struct Report {
  size_t started = 0;
  size_t completed = 0;
  size_t failed = 0;
  size_t not_started = 0;
  std::map<std::string, size_t> errors;  // by ErrorKey
  std::string first_error;               // one example message
  double wall_s = 0;
  double request_throughput = 0;  // completed requests / s
  double input_token_throughput = 0;
  double output_token_throughput = 0;
  double goodput = 0;  // completed requests meeting the SLO / s
  size_t good = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cached_tokens = 0;
  bool usage_reported = false;  // every completed request had usage (else chunks were counted)
  bool prompt_tokens_known = false;
  // Milliseconds. TPOT: per request, (e2e - ttft) / (output tokens - 1), over requests with
  // more than one output token. ITL: every gap between consecutive content chunks.
  Summary ttft_ms, tpot_ms, itl_ms, e2e_ms;
  std::array<size_t, kNumClasses> completed_by_class{};
  Slo slo;
};

Report BuildReport(const std::vector<RequestResult>& results, double wall_s, const Slo& slo);

std::string FormatReport(const Report& r);
nlohmann::json ReportToJson(const Report& r);

}  // namespace jisu::loadgen
