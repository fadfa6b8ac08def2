#include "format/json_util.h"

#include <new>
#include <set>
#include <string>
#include <vector>

#include "format/text_util.h"

namespace jisu {
namespace {

// Deepest [ / { nesting outside strings, stopping early once past `limit`. Malformed
// input is left for the real parser to report.
int MaxDepth(std::string_view text, int limit = kMaxJsonDepth) {
  int depth = 0;
  int max_depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) max_depth = depth;
      if (max_depth > limit) break;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

}  // namespace

bool JsonDepthWithin(std::string_view text, int limit) { return MaxDepth(text, limit) <= limit; }

Result<nlohmann::json> ParseJson(std::string_view text) {
  if (MaxDepth(text) > kMaxJsonDepth) {
    return Status::Corrupt("JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  bool has_duplicate = false;
  const auto callback = [&](int /*depth*/, nlohmann::json::parse_event_t event,
                            nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) {
      keys.emplace_back();
    } else if (event == E::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == E::key && !keys.empty() && !has_duplicate) {
      if (!keys.back().insert(parsed.get<std::string>()).second) {
        has_duplicate = true;
        duplicate = parsed.get<std::string>();
      }
    }
    return true;
  };
  try {
    nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), callback);
    if (has_duplicate) return Status::Corrupt("duplicate JSON key " + QuoteName(duplicate));
    return j;
  } catch (const nlohmann::json::exception& e) {
    return Status::Corrupt(std::string("invalid JSON: ") + e.what());
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("out of memory parsing JSON");
  }
}

template <class J>
Result<J> ParseUntrustedJson(std::string_view text, std::string_view what) {
  if (MaxDepth(text) > kMaxJsonDepth) {
    return Status::Corrupt(std::string(what) + ": JSON nested deeper than " +
                           std::to_string(kMaxJsonDepth) + " levels");
  }
  try {
    J j = J::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Status::Corrupt(std::string(what) + ": not valid JSON");
    return j;
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted(std::string(what) + ": out of memory parsing JSON");
  }
}

template Result<nlohmann::json> ParseUntrustedJson(std::string_view, std::string_view);
template Result<nlohmann::ordered_json> ParseUntrustedJson(std::string_view, std::string_view);

}  // namespace jisu
