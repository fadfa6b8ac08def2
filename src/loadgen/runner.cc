#include "loadgen/runner.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace jisu::loadgen {
namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

RunOutcome RunLoad(size_t n, const RunOptions& options,
                   const std::function<RequestResult(size_t)>& send) {
  std::mutex mu;
  std::condition_variable work_cv;  // workers wait for a request
  std::condition_variable slot_cv;  // the dispatcher waits for a free slot / the end
  std::deque<size_t> queue;
  size_t idle = 0;
  size_t in_flight = 0;
  size_t finished = 0;
  bool closing = false;
  std::vector<std::thread> workers;
  std::vector<RequestResult> results(n);
  std::vector<bool> started(n, false);
  const Clock::time_point t0 = Clock::now();
  Clock::time_point last_done = t0;

  auto worker = [&] {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      work_cv.wait(lock, [&] { return !queue.empty() || closing; });
      if (queue.empty()) return;
      const size_t i = queue.front();
      queue.pop_front();
      --idle;
      lock.unlock();
      const double start = std::chrono::duration<double>(Clock::now() - t0).count();
      RequestResult r = send(i);
      r.index = i;
      r.start_s = start;
      lock.lock();
      results[i] = std::move(r);
      last_done = Clock::now();
      --in_flight;
      ++finished;
      ++idle;
      slot_cv.notify_all();
    }
  };

  size_t dispatched = 0;
  for (size_t i = 0; i < n; ++i) {
    const double at = options.arrivals.empty() ? 0.0 : options.arrivals[i];
    if (options.duration_s > 0 && at > options.duration_s) break;
    std::this_thread::sleep_until(
        t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(at)));
    std::unique_lock<std::mutex> lock(mu);
    if (options.max_concurrency > 0) {
      slot_cv.wait(lock, [&] { return in_flight < static_cast<size_t>(options.max_concurrency); });
    }
    if (options.duration_s > 0 &&
        std::chrono::duration<double>(Clock::now() - t0).count() > options.duration_s) {
      break;
    }
    started[i] = true;
    ++in_flight;
    ++dispatched;
    queue.push_back(i);
    if (queue.size() > idle) {  // every idle worker already has a request coming
      ++idle;
      workers.emplace_back(worker);
    }
    work_cv.notify_one();
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    slot_cv.wait(lock, [&] { return finished == dispatched; });
    closing = true;
    work_cv.notify_all();
  }
  for (auto& w : workers) w.join();

  RunOutcome out;
  out.wall_s = std::chrono::duration<double>(last_done - t0).count();
  out.not_started = n - dispatched;
  for (size_t i = 0; i < n; ++i) {
    if (started[i]) out.results.push_back(std::move(results[i]));
  }
  return out;
}

}  // namespace jisu::loadgen
