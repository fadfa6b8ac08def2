// Drives a request set against a server: requests are released at their arrival times (Poisson)
// or as soon as possible, at most `max_concurrency` in flight, each on a thread of its own
// (the pool grows to the number in flight; ~300 blocking streams cost little next to what they
// measure, and a thread per request keeps each request's timing free of the others' parsing).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "loadgen/request_result.h"

namespace jisu::loadgen {

struct RunOptions {
  std::vector<double> arrivals;  // seconds since start per request; empty: all at time 0
  int max_concurrency = 0;       // 0: unlimited
  double duration_s = 0;         // > 0: no request is started after this many seconds
};

struct RunOutcome {
  std::vector<RequestResult> results;  // the requests started, in request-set order
  double wall_s = 0;                   // start to last completion
  size_t not_started = 0;              // cut by --duration
};

// `send(i)` performs request i (blocking) and returns its result; it is called from many
// threads at once. Results get index, start_s filled in here.
RunOutcome RunLoad(size_t num_requests, const RunOptions& options,
                   const std::function<RequestResult(size_t)>& send);

}  // namespace jisu::loadgen
