// Types shared by the tokenizer's pipeline stages (normalizer, pre-tokenizer, model, decoder).
#pragma once

#include <memory>
#include <string>

#include "tokenizer/regex.h"

namespace jisu {

// A piece of text on its way to the model. `at_start` says it begins at offset 0 of the
// original input (the "first" prepend scheme of Metaspace depends on it).
struct Piece {
  std::string text;
  bool at_start = false;
};

// A Replace/Split pattern from tokenizer.json: {"String": "..."} or {"Regex": "..."}; a String
// is compiled as a quoted regex so both go through one matcher.
struct Pattern {
  std::shared_ptr<const Regex> regex;
};

enum class PrependScheme { kAlways, kFirst, kNever };

}  // namespace jisu
