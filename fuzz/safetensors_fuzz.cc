// libFuzzer target: SafetensorsFile::Parse on arbitrary bytes, then every tensor's range is
// read at both ends so ASan checks it.
#include <cstddef>
#include <cstdint>

#include "format/safetensors.h"

namespace {
volatile uint64_t g_sink;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = jisu::SafetensorsFile::Parse(data, size);
  if (!file.ok()) return 0;
  const jisu::SafetensorsFile& f = **file;
  for (const auto& [key, value] : f.metadata()) g_sink = g_sink + key.size() + value.size();
  for (const jisu::SafetensorsTensor& t : f.tensors()) {
    g_sink = g_sink + static_cast<uint64_t>(t.NumElements()) + t.shape.size();
    if (f.Find(t.name) != &t) __builtin_trap();
    if (t.data < data || t.data + t.num_bytes > data + size) __builtin_trap();
    if (t.num_bytes > 0) g_sink = g_sink + t.data[0] + t.data[t.num_bytes - 1];
  }
  return 0;
}
