// libFuzzer target: GgufFile::Parse on arbitrary bytes, then every accessor on whatever
// parsed, reading each tensor's first and last byte so ASan checks the reported ranges.
#include <cstddef>
#include <cstdint>

#include "format/gguf.h"

namespace {

volatile uint64_t g_sink;

void Touch(const jisu::GgufValue& v) {
  g_sink = g_sink + v.IsInteger() + v.AsInt().value_or(0) +
           static_cast<uint64_t>(v.AsFloat().value_or(0) != 0) + v.s.size();
  for (const jisu::GgufValue& e : v.array) Touch(e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = jisu::GgufFile::Parse(data, size);
  if (!file.ok()) return 0;
  const jisu::GgufFile& f = **file;
  for (const auto& [key, value] : f.metadata()) {
    Touch(value);
    (void)f.GetString(key);
    (void)f.GetInt(key);
    (void)f.GetFloat(key);
    (void)f.GetBool(key);
    (void)f.GetStringArray(key);
    (void)f.GetIntArray(key);
    (void)f.GetFloatArray(key);
  }
  for (const jisu::GgufTensorInfo& t : f.tensors()) {
    g_sink = g_sink + static_cast<uint64_t>(t.NumElements()) + t.shape.size();
    if (f.FindTensor(t.name) != &t) __builtin_trap();
    if (t.offset % f.alignment() != 0 || t.offset + t.num_bytes > size) __builtin_trap();
    if (t.num_bytes > 0) g_sink = g_sink + t.data[0] + t.data[t.num_bytes - 1];
  }
  return 0;
}
