// Large read-mostly buffers that are streamed end to end (repacked weights, the bandwidth
// probe): anonymous memory on 2 MiB boundaries, asked for transparent huge pages. Streaming
// from 4 KiB pages was TLB-bound on Zen 4: an F16 TinyLlama decode at 2 threads ran 13-14
// tok/s on a 4 KiB-page copy and 16-22 on a huge-page one (bench/results/
// 2026-12-02-cpu-f16-interleave.md). Where THP is off the hint is ignored and 4 KiB pages
// are used; the memory is the same.
#pragma once

#include <cstddef>

namespace jisu {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  // Throws std::bad_alloc when the mapping fails. Contents start zeroed.
  explicit HugePageBuffer(size_t bytes);
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  ~HugePageBuffer();

  // Faults every page in now, so the memory is committed (a buffer too large for the machine
  // fails here, not later) and no later access pays a page fault. The kernel zeroes each page
  // as it faults it in, which is CPU work: up to `threads` threads (0: the hardware's) touch
  // disjoint 2 MiB-aligned ranges. One write a 4 KiB page, not a memset: the pages are zero.
  void Commit(int threads = 0);

  void* data() const { return base_; }
  size_t size() const { return size_; }  // the request rounded up to 2 MiB

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace jisu
