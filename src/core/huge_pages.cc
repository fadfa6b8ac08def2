#include "core/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace jisu {

namespace {
constexpr size_t kHuge = size_t{2} << 20;
}

HugePageBuffer::HugePageBuffer(size_t bytes) {
  if (bytes == 0) return;
  const size_t size = (bytes + kHuge - 1) / kHuge * kHuge;
  // Over-map by 2 MiB and trim both ends, so the kept range starts on a huge-page boundary.
  void* p = mmap(nullptr, size + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  auto* raw = static_cast<uint8_t*>(p);
  auto* aligned =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + kHuge - 1) / kHuge * kHuge);
  if (aligned > raw) munmap(raw, static_cast<size_t>(aligned - raw));
  const size_t tail = static_cast<size_t>(raw + size + kHuge - (aligned + size));
  if (tail > 0) munmap(aligned + size, tail);
#ifdef MADV_HUGEPAGE
  madvise(aligned, size, MADV_HUGEPAGE);  // before the first touch, which allocates the pages
#endif
  base_ = aligned;
  size_ = size;
}

void HugePageBuffer::Commit(int threads) {
  if (base_ == nullptr) return;
  const size_t chunks = size_ / kHuge;  // size_ is a multiple of 2 MiB
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t n =
      std::min(chunks, threads > 0 ? static_cast<size_t>(threads) : std::min<size_t>(hw, 16));
  auto touch = [this, chunks, n](size_t part) {
    auto* p = static_cast<volatile uint8_t*>(base_);
    for (size_t at = chunks * part / n * kHuge; at < chunks * (part + 1) / n * kHuge; at += 4096) {
      p[at] = 0;
    }
  };
  std::vector<std::thread> helpers;
  helpers.reserve(n - 1);
  for (size_t part = 1; part < n; ++part) {
    try {
      helpers.emplace_back(touch, part);
    } catch (const std::system_error&) {  // no thread to be had: this one does that part
      touch(part);
    }
  }
  touch(0);
  for (std::thread& t : helpers) t.join();
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) munmap(base_, size_);
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

HugePageBuffer::~HugePageBuffer() {
  if (base_ != nullptr) munmap(base_, size_);
}

}  // namespace jisu
