// Streaming-read memory bandwidth, the ceiling of decode speed: a decode step reads every
// weight once, so tokens/s <= bandwidth / bytes per token (the roofline of issue 3).
// Measured by summing a buffer much larger than the last-level cache on `threads` threads
// (each its own contiguous slice), best of several passes. A measurement, not a test.
#pragma once

#include <cstdint>

namespace jisu {

struct MemBandwidthOptions {
  uint64_t buffer_bytes = uint64_t{1} << 30;  // 1 GiB: beyond any L3 we expect
  int passes = 5;                             // best of
};

// GB/s (1e9 bytes per second) of reading at `threads` threads.
double MeasureReadBandwidth(int threads, const MemBandwidthOptions& options = {});

}  // namespace jisu
