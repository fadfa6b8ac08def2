// A persistent pool of worker threads for data-parallel kernels. Threads are created once and
// reused for every call, so a decode step pays no thread start-up and no allocation. The
// calling thread takes part in the work, so a pool of N threads runs N-1 workers plus the
// caller. Between calls, workers spin briefly (a decode step issues hundreds of parallel
// sections back to back; a sleeping worker costs tens of microseconds to wake) and then sleep
// on a condition variable, so an idle pool uses no CPU.
// Calls are not reentrant: a task must not call RunOnAll/ParallelFor on the same pool, and one
// thread at a time drives the pool.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/function_ref.h"

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
  void RunOnAll(FunctionRef<void(int thread_index)> fn);

  // Splits [0, n) into contiguous chunks of at least `grain` items, one per thread, and runs
  // fn(begin, end) for each. Small n runs inline on the caller.
  void ParallelFor(int64_t n, int64_t grain, FunctionRef<void(int64_t begin, int64_t end)> fn);

 private:
  void WorkerLoop(int thread_index);

  int num_threads_;
  std::vector<std::thread> workers_;
  // Published by the caller before bumping generation_; read by workers after seeing it.
  FunctionRef<void(int)>* task_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleeping_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable wake_cv_;
};

}  // namespace jisu
