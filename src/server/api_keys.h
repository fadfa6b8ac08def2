// The API keys of `jisu serve --api-keys FILE`: each key names the tenant its requests run as
// (their prefix-cache salt and accounting) and, optionally, its own limits. The file is plain
// text, one key per line, validated as a whole at startup (errors name the line and the field,
// never the key):
//
//   # comment lines and blank lines are ignored
//   KEY tenant=NAME [rpm=N] [tpm=N] [concurrency=N] [metrics]
//
//   KEY          16 to 256 characters of A-Z a-z 0-9 - . _ ~ + / = (RFC 6750's bearer token
//                alphabet); unique in the file. Never logged, never echoed in an error.
//   tenant=NAME  1 to 64 characters of A-Z a-z 0-9 - . _ ; several keys may share a tenant
//                (rotation), each keeps its own limits.
//   rpm=N        requests per minute (token bucket: bursts of up to N, refilled N/60 per s)
//   tpm=N        prompt + completion tokens per minute (token bucket of N)
//   concurrency=N  requests in flight at once
//   metrics      this key may read GET /metrics (which names every tenant)
//
// Absent limits are unlimited; N is an integer in [1, 1000000000].
// Matching an Authorization header compares it with every key in constant time per key (the
// time depends on the lengths only, not on which bytes match or which key it is).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "jisu/status.h"

namespace jisu::server {

// 0 = unlimited.
struct KeyLimits {
  int64_t requests_per_minute = 0;
  int64_t tokens_per_minute = 0;
  int64_t max_concurrent = 0;
};

struct ApiKey {
  std::string key;
  std::string tenant;
  KeyLimits limits;
  bool may_read_metrics = false;
};

class ApiKeys {
 public:
  // Parses the keys file format above; `source` names the file in errors ("keys.txt:3: ...").
  static Result<ApiKeys> Parse(std::string_view text, const std::string& source);
  static Result<ApiKeys> Load(const std::string& path);

  const std::vector<ApiKey>& keys() const { return keys_; }
  size_t size() const { return keys_.size(); }

  // The index of the key that `authorization` ("Bearer KEY") carries, or -1.
  int64_t Match(const std::string& authorization) const;

 private:
  std::vector<ApiKey> keys_;
};

}  // namespace jisu::server
