// A persistent pool of worker threads for data-parallel kernels. Threads are created once and
// reused for every ParallelFor, so a decode step pays no thread start-up. The calling thread
// takes part in the work, so a pool of N threads runs N-1 workers plus the caller.
// ParallelFor calls are not reentrant: a task must not call ParallelFor on the same pool.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace jisu {

class ThreadPool {
 public:
  // `num_threads` <= 0 means the number of hardware threads.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Runs fn(thread_index) once on each of the pool's threads (index 0 is the caller) and
  // returns when all have finished.
  void RunOnAll(const std::function<void(int thread_index)>& fn);

  // Splits [0, n) into contiguous chunks of at least `grain` items, one per thread, and runs
  // fn(begin, end) for each. Small n runs inline on the caller.
  void ParallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void WorkerLoop(int thread_index);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int)>* task_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace jisu
