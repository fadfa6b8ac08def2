#include "server/api_keys.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "format/text_util.h"
#include "server/openai_protocol.h"

namespace jisu::server {
namespace {

constexpr size_t kMinKeyLength = 16;
constexpr size_t kMaxKeyLength = 256;
constexpr size_t kMaxTenantLength = 64;
constexpr int64_t kMaxLimit = 1000000000;
constexpr size_t kMaxFileBytes = 16u << 20;

bool IsKeyChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::strchr("-._~+/=", c) != nullptr;
}

bool IsTenantChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_';
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// Why `key` is not a usable key, or empty. Says nothing of the key's bytes.
std::string KeyProblem(std::string_view key) {
  if (key.size() < kMinKeyLength || key.size() > kMaxKeyLength) {
    return "the key has " + std::to_string(key.size()) + " characters; keys have " +
           std::to_string(kMinKeyLength) + " to " + std::to_string(kMaxKeyLength);
  }
  for (size_t i = 0; i < key.size(); ++i) {
    if (!IsKeyChar(key[i])) {
      return "character " + std::to_string(i + 1) +
             " of the key is not one of A-Z a-z 0-9 - . _ ~ + / =";
    }
  }
  return "";
}

Status ParseLimit(std::string_view name, std::string_view value, int64_t* out) {
  int64_t v = 0;
  bool ok = !value.empty() && value.size() <= 10;
  for (char c : value) {
    if (c < '0' || c > '9') ok = false;
    if (ok) v = v * 10 + (c - '0');
  }
  if (!ok || v < 1 || v > kMaxLimit) {
    return Status::InvalidArgument(std::string(name) + ": must be an integer in [1, " +
                                   std::to_string(kMaxLimit) + "], got " + QuoteName(value));
  }
  *out = v;
  return Status::Ok();
}

// One non-comment line after its key: tenant=, rpm=, tpm=, concurrency=, metrics.
Status ParseAttributes(const std::vector<std::string_view>& fields, ApiKey* key) {
  std::unordered_map<std::string, bool> seen;
  for (size_t i = 1; i < fields.size(); ++i) {
    const std::string_view f = fields[i];
    const size_t eq = f.find('=');
    const std::string name(f.substr(0, eq));
    const std::string_view value = eq == std::string_view::npos ? "" : f.substr(eq + 1);
    if (!seen.emplace(name, true).second) {
      return Status::InvalidArgument(QuoteName(name) + " is given twice");
    }
    if (name == "metrics" && eq == std::string_view::npos) {
      key->may_read_metrics = true;
    } else if (name == "tenant" && eq != std::string_view::npos) {
      if (value.empty() || value.size() > kMaxTenantLength) {
        return Status::InvalidArgument("tenant: 1 to " + std::to_string(kMaxTenantLength) +
                                       " characters, got " + std::to_string(value.size()));
      }
      for (char c : value) {
        if (!IsTenantChar(c)) {
          return Status::InvalidArgument("tenant: only A-Z a-z 0-9 - . _ are allowed, got " +
                                         QuoteName(value));
        }
      }
      key->tenant = std::string(value);
    } else if (name == "rpm" && eq != std::string_view::npos) {
      JISU_RETURN_IF_ERROR(ParseLimit(name, value, &key->limits.requests_per_minute));
    } else if (name == "tpm" && eq != std::string_view::npos) {
      JISU_RETURN_IF_ERROR(ParseLimit(name, value, &key->limits.tokens_per_minute));
    } else if (name == "concurrency" && eq != std::string_view::npos) {
      JISU_RETURN_IF_ERROR(ParseLimit(name, value, &key->limits.max_concurrent));
    } else {
      return Status::InvalidArgument("unknown field " + QuoteName(f) +
                                     " (expected tenant=NAME, rpm=N, tpm=N, concurrency=N or "
                                     "metrics)");
    }
  }
  if (key->tenant.empty()) return Status::InvalidArgument("tenant: missing (write tenant=NAME)");
  return Status::Ok();
}

}  // namespace

Result<ApiKeys> ApiKeys::Parse(std::string_view text, const std::string& source) {
  ApiKeys out;
  std::unordered_map<std::string, int64_t> line_of_key;
  int64_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto fields = Fields(line);
    if (fields.empty() || fields[0][0] == '#') continue;
    const std::string where = source + ":" + std::to_string(line_no) + ": ";
    for (char c : line) {
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
        return Status::InvalidArgument(where + "control character in the line");
      }
    }
    if (std::string problem = KeyProblem(fields[0]); !problem.empty()) {
      return Status::InvalidArgument(where + "key: " + problem);
    }
    ApiKey key;
    key.key = std::string(fields[0]);
    if (Status s = ParseAttributes(fields, &key); !s.ok()) {
      return Status::InvalidArgument(where + s.message());
    }
    auto [it, inserted] = line_of_key.emplace(key.key, line_no);
    if (!inserted) {
      return Status::InvalidArgument(where + "key: the same key as line " +
                                     std::to_string(it->second));
    }
    out.keys_.push_back(std::move(key));
  }
  if (out.keys_.empty()) return Status::InvalidArgument(source + ": no keys");
  return out;
}

Result<ApiKeys> ApiKeys::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("--api-keys " + path + ": cannot open: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IoError("--api-keys " + path + ": read error");
  const std::string s = text.str();
  if (s.size() > kMaxFileBytes) {
    return Status::InvalidArgument("--api-keys " + path + ": larger than 16 MiB");
  }
  return Parse(s, path);
}

int64_t ApiKeys::Match(const std::string& authorization) const {
  // Every key is compared, so the time does not tell which one matched (or how far it got).
  int64_t found = -1;
  for (size_t i = 0; i < keys_.size(); ++i) {
    const bool match = BearerMatches(authorization, keys_[i].key);
    found = match ? static_cast<int64_t>(i) : found;
  }
  return found;
}

}  // namespace jisu::server
