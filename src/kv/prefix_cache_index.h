// A fixed-capacity hash table from 64-bit block hashes to small non-negative ints (block ids,
// tenant ids), for the prefix cache. Linear probing with backward-shift deletion: no tombstones,
// no allocation after construction, O(1) expected per operation while the load stays <= 1/2.
// Keys must already be well mixed (they are block hashes); the home slot is the low bits.
// Invariants: at most `max_entries` entries (asserted); every entry is reachable from its home
// slot without crossing an empty slot.
#pragma once

#include <cassert>
#include <cstdint>
#include <vector>

namespace jisu {

class BlockHashIndex {
 public:
  explicit BlockHashIndex(int64_t max_entries) : max_entries_(max_entries) {
    int64_t capacity = 8;
    while (capacity < 2 * max_entries) capacity *= 2;
    mask_ = static_cast<uint64_t>(capacity - 1);
    keys_.assign(capacity, 0);
    values_.assign(capacity, kEmpty);
  }

  // The value stored for `key`, or -1.
  int32_t Find(uint64_t key) const {
    for (uint64_t i = key & mask_;; i = (i + 1) & mask_) {
      if (values_[i] == kEmpty) return -1;
      if (keys_[i] == key) return values_[i];
    }
  }

  // Inserts key -> value (value >= 0). Returns false, changing nothing, if the key is present.
  bool Insert(uint64_t key, int32_t value) {
    assert(value >= 0);
    uint64_t i = key & mask_;
    for (; values_[i] != kEmpty; i = (i + 1) & mask_) {
      if (keys_[i] == key) return false;
    }
    assert(size_ < max_entries_);
    keys_[i] = key;
    values_[i] = value;
    ++size_;
    return true;
  }

  // Returns false if the key was absent.
  bool Erase(uint64_t key) {
    uint64_t i = key & mask_;
    for (;; i = (i + 1) & mask_) {
      if (values_[i] == kEmpty) return false;
      if (keys_[i] == key) break;
    }
    // Backward shift: pull later entries of the probe run into the hole unless their home slot
    // lies cyclically in (hole, j], where they are already reachable.
    for (uint64_t j = (i + 1) & mask_; values_[j] != kEmpty; j = (j + 1) & mask_) {
      const uint64_t home = keys_[j] & mask_;
      const bool stays = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
      if (stays) continue;
      keys_[i] = keys_[j];
      values_[i] = values_[j];
      i = j;
    }
    values_[i] = kEmpty;
    --size_;
    return true;
  }

  int64_t size() const { return size_; }

 private:
  static constexpr int32_t kEmpty = -1;
  [[maybe_unused]] int64_t max_entries_;  // read by the assert only
  int64_t size_ = 0;
  uint64_t mask_ = 0;
  std::vector<uint64_t> keys_;
  std::vector<int32_t> values_;  // kEmpty marks a free slot
};

}  // namespace jisu
