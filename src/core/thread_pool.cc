#include "core/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define JISU_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
// The spin hint, as pause on x86: a sched_yield system call per poll would hand the core to
// any other runnable thread 2048 times before the worker sleeps.
#define JISU_CPU_RELAX() __asm__ volatile("yield" ::: "memory")
#else
#define JISU_CPU_RELAX() std::this_thread::yield()
#endif

namespace jisu {
namespace {
// A worker polls briefly with pause (tens of microseconds), then yields its core for a while
// (so an oversubscribed machine still makes progress), then sleeps.
constexpr int kSpinIterations = 2048;
constexpr int kYieldIterations = 64;
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::thread::hardware_concurrency());
  num_threads_ = std::max(1, num_threads);
  workers_.reserve(num_threads_ - 1);
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  wake_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::WorkerLoop(int thread_index) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    uint64_t generation;
    while ((generation = generation_.load(std::memory_order_acquire)) == seen) {
      if (stop_.load(std::memory_order_relaxed)) return;
      if (++spins < kSpinIterations) {
        JISU_CPU_RELAX();
        continue;
      }
      if (spins < kSpinIterations + kYieldIterations) {
        std::this_thread::yield();
        continue;
      }
      std::unique_lock<std::mutex> lock(mu_);
      sleeping_.fetch_add(1);
      wake_cv_.wait(lock, [&] { return generation_.load() != seen || stop_.load(); });
      sleeping_.fetch_sub(1);
      spins = 0;
    }
    seen = generation;
    (*task_)(thread_index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::RunOnAll(FunctionRef<void(int)> fn) {
  if (num_threads_ == 1) {
    fn(0);
    return;
  }
  task_ = &fn;
  pending_.store(num_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1);  // seq_cst: ordered before the sleeping_ check below
  if (sleeping_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);  // a worker between its check and its wait holds mu_
    wake_cv_.notify_all();
  }
  fn(0);
  int spins = 0;
  while (pending_.load(std::memory_order_acquire) != 0) {
    if (++spins < kSpinIterations) {
      JISU_CPU_RELAX();
    } else {
      std::this_thread::yield();
    }
  }
  task_ = nullptr;
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int64_t num_chunks = std::min<int64_t>(num_threads_, max_chunks);
  if (num_chunks <= 1) {
    fn(0, n);
    return;
  }
  RunOnAll([&](int t) {
    if (t >= num_chunks) return;
    const int64_t begin = n * t / num_chunks;
    const int64_t end = n * (t + 1) / num_chunks;
    if (begin < end) fn(begin, end);
  });
}

}  // namespace jisu
