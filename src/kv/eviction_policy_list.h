// Doubly linked lists of block ids threaded through per-block prev/next arrays, so that the
// eviction policies push, unlink and pop in O(1) without allocating. A block is on at most one
// list of a given BlockLinks at a time (the caller's invariant; asserted where cheap).
#pragma once

#include <cassert>
#include <cstdint>
#include <vector>

namespace jisu {

struct BlockList {
  int32_t head = -1;  // least recently inserted
  int32_t tail = -1;  // most recently inserted
  int64_t size = 0;
};

class BlockLinks {
 public:
  void Init(int32_t num_blocks) {
    prev_.assign(num_blocks, -1);
    next_.assign(num_blocks, -1);
  }

  void PushBack(BlockList& list, int32_t b) {
    prev_[b] = list.tail;
    next_[b] = -1;
    if (list.tail >= 0) {
      next_[list.tail] = b;
    } else {
      list.head = b;
    }
    list.tail = b;
    ++list.size;
  }

  void Unlink(BlockList& list, int32_t b) {
    assert(list.size > 0);
    if (prev_[b] >= 0) {
      next_[prev_[b]] = next_[b];
    } else {
      assert(list.head == b);
      list.head = next_[b];
    }
    if (next_[b] >= 0) {
      prev_[next_[b]] = prev_[b];
    } else {
      assert(list.tail == b);
      list.tail = prev_[b];
    }
    prev_[b] = next_[b] = -1;
    --list.size;
  }

  int32_t PopFront(BlockList& list) {
    const int32_t b = list.head;
    if (b >= 0) Unlink(list, b);
    return b;
  }

 private:
  std::vector<int32_t> prev_;
  std::vector<int32_t> next_;
};

}  // namespace jisu
