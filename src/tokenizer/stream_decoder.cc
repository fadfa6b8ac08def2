#include <string>

#include "core/utf8.h"
#include "tokenizer/tokenizer.h"

namespace jisu {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

namespace {

// Moves the longest decidable prefix of `pending` to the result: valid characters as they
// are, invalid subparts as U+FFFD; an incomplete sequence at the end stays (unless `flush`).
std::string Drain(std::string* pending, bool flush) {
  std::string out;
  size_t pos = 0;
  while (pos < pending->size()) {
    char32_t cp;
    size_t len;
    const utf8::Step step = utf8::Next(*pending, pos, &cp, &len);
    if (step == utf8::Step::kIncomplete && !flush) break;
    if (step == utf8::Step::kValid) {
      out.append(*pending, pos, len);
    } else {
      out.append(utf8::kReplacement);
    }
    pos += len;
  }
  pending->erase(0, pos);
  return out;
}

}  // namespace

std::string StreamDecoder::Push(int32_t id) {
  if (skip_special_ && tokenizer_.IsSpecial(id)) return {};
  if (id < 0 || id >= tokenizer_.vocab_size()) return {};
  // ids_ holds the tokens decoded so far: the first one gets the decoder's first-token rule
  // (SentencePiece's dropped leading space).
  pending_ += tokenizer_.DecodePiece(id, ids_.empty());
  ids_.push_back(id);
  return Drain(&pending_, /*flush=*/false);
}

std::string StreamDecoder::Flush() { return Drain(&pending_, /*flush=*/true); }

}  // namespace jisu
