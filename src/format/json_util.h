// Parsing untrusted JSON (safetensors headers, index files) into nlohmann::json without
// exceptions escaping: nesting depth is bounded before parsing (nlohmann recurses when it
// destroys values) and duplicate object keys, which nlohmann would silently collapse, are
// rejected so that two tensors cannot hide behind one name.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "jisu/status.h"

namespace jisu {

inline constexpr int kMaxJsonDepth = 64;

Result<nlohmann::json> ParseJson(std::string_view text);

// Whether every [ / { nesting of `text` (outside strings) is at most `limit` deep: checked
// before handing untrusted text to nlohmann, whose destructor recurses once per level.
bool JsonDepthWithin(std::string_view text, int limit = kMaxJsonDepth);

// Untrusted JSON where a repeated key is harmless (config.json, tokenizer files, message files,
// a server's answers): depth-bounded like ParseJson, no exception escapes, and a repeated key
// keeps nlohmann's behaviour (as Python's json module, which wrote most of these files, reads
// them). `what` names the input in the error.
template <class J>
Result<J> ParseUntrustedJson(std::string_view text, std::string_view what);
extern template Result<nlohmann::json> ParseUntrustedJson(std::string_view, std::string_view);
extern template Result<nlohmann::ordered_json> ParseUntrustedJson(std::string_view,
                                                                  std::string_view);

}  // namespace jisu
