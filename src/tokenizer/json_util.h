// Small checked accessors for tokenizer.json / tokenizer_config.json values: a wrong type or a
// missing required key becomes a Status naming the key, never an nlohmann exception.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "jisu/status.h"

namespace jisu::json_util {

using Json = nlohmann::json;

// Absent or null: `out` untouched (unless required). Wrong type: InvalidArgument.
Status GetString(const Json& obj, const char* key, std::string* out, bool required = false);
Status GetBool(const Json& obj, const char* key, bool* out);
Status GetInt(const Json& obj, const char* key, int64_t* out, bool required = false);
// A single code point string (e.g. Metaspace's replacement).
Status GetChar(const Json& obj, const char* key, std::string* out);
// Present and not null.
inline bool Has(const Json& obj, const char* key) {
  if (!obj.is_object()) return false;
  auto it = obj.find(key);
  return it != obj.end() && !it->is_null();
}
// A special token given as "text", {"content": "text", ...} or null.
Status GetTokenString(const Json& obj, const char* key, std::optional<std::string>* out);

}  // namespace jisu::json_util
