// libFuzzer target: ParseSpmModel (a tokenizer.model from a Hugging Face folder) on arbitrary
// bytes; whatever parses must hold valid UTF-8 pieces of known types and in-range special ids.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/utf8.h"
#include "tokenizer/spm_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = jisu::ParseSpmModel(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!m.ok()) return 0;
  const auto n = static_cast<int64_t>(m->pieces.size());
  for (const auto& p : m->pieces) {
    if (!jisu::utf8::IsValid(p.text) || p.type < 1 || p.type > 6) __builtin_trap();
  }
  for (int32_t id : {m->unk_id, m->bos_id, m->eos_id, m->pad_id}) {
    if (id < -1 || id >= n) __builtin_trap();
  }
  return 0;
}
