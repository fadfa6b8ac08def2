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

}  // namespace jisu
