// libFuzzer target: arbitrary bytes as tokenizer.json (optionally followed by a
// tokenizer_config.json after a NUL byte). Loading must return a Status or a tokenizer, never
// crash; a loaded tokenizer then encodes, decodes and stream-decodes some text, including a
// slice of the input itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view tokenizer_json = input.substr(0, nul);
  const std::string_view config =
      nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  auto tok = jisu::Tokenizer::FromHuggingFace(tokenizer_json, config);
  if (!tok.ok()) return 0;
  const jisu::Tokenizer& t = **tok;
  const std::string texts[] = {
      "Hello world! It's 12345 <s> </s> <|endoftext|>  \n\t caf\xC3\xA9 \xE6\x97\xA5 "
      "\xF0\x9F\x99\x82",
      std::string(tokenizer_json.substr(0, 256)),
      "\xFF\xFE bad utf8 \xE2\x82",
  };
  for (const std::string& text : texts) {
    for (bool add_special : {false, true}) {
      const auto ids = t.Encode(text, add_special);
      for (int32_t id : ids) {
        if (id < 0 || id >= t.vocab_size()) __builtin_trap();
      }
      (void)t.Decode(ids, false);
      (void)t.Decode(ids, true);
      jisu::StreamDecoder stream(t, true);
      for (int32_t id : ids) (void)stream.Push(id);
      (void)stream.Flush();
    }
  }
  const int32_t odd[] = {-1, 0, 1, t.vocab_size() - 1, t.vocab_size(), 1 << 30};
  (void)t.Decode(odd, false);
  for (int32_t id : odd) {
    (void)t.TokenBytes(id);
    (void)t.IdToToken(id);
    (void)t.IsSpecial(id);
  }
  return 0;
}
