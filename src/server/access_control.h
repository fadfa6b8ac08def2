// Who may call the API, and as which tenant. Three set-ups:
//   no key        every request is let in; the tenant is the OpenAI `user` field.
//   --api-key K   one key shared by every client (a gateway): /v1/* and /metrics need it; the
//                 tenant is still the `user` field, which the key holder vouches for.
//   --api-keys F  a keys file (api_keys.h): each key is a tenant with its own limits
//                 (rate_limiter.h); the `user` field no longer selects anything; /v1/* need a
//                 key, /metrics a key marked `metrics` (it names every tenant and their usage).
// /health is always open. The prefix-cache scope decides what the engine may reuse across
// requests: `tenant` salts every request's cached blocks with its tenant, so one tenant never
// hits (and cannot time) blocks another computed; `global` shares blocks between tenants (the
// CVE-2025-46570 timing channel: opt in only where tenants trust each other). `auto` is
// `tenant` with a keys file and `global` otherwise (where tenants name themselves anyway).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "jisu/status.h"
#include "server/api_keys.h"
#include "server/openai_protocol.h"
#include "server/rate_limiter.h"

namespace httplib {
struct Response;
}

namespace jisu::server {

enum class CacheScope { kGlobal, kTenant };

struct AccessOptions {
  std::string api_key;               // --api-key
  std::string api_keys_path;         // --api-keys
  std::string cache_scope = "auto";  // --prefix-cache-scope: auto, tenant or global
};

// An error answer, with the seconds for a Retry-After header when > 0.
struct Refusal {
  ApiError error;
  int64_t retry_after_s = 0;
};

// A generation request that was let in: the tenant it runs as, its prefix-cache salt, and its
// hold on its key's limits (released when the request ends).
struct Caller {
  std::string tenant;  // the engine tenant's name; "" = no tenant
  std::string cache_salt;
  KeyLease lease;
  int64_t key_index = -1;  // into the keys file; -1 = no keys file
};

class AccessControl {
 public:
  // Loads and checks the keys file (errors name its line and field) and the scope.
  static Result<std::unique_ptr<AccessControl>> Create(
      const AccessOptions& options, RateLimiter::Clock clock = RateLimiter::SteadyMicros);

  CacheScope scope() const { return scope_; }

  // GET /v1/models (metrics = false) and GET /metrics (metrics = true): nullopt when the
  // request's Authorization header lets it in.
  std::optional<Refusal> Authorize(const std::string& authorization, bool metrics) const;

  // A generation request: authenticates it and takes its key's concurrency slot and one
  // request per minute (401 or 429 otherwise).
  std::optional<Refusal> Admit(const std::string& authorization, Caller* caller);
  // Once the body is parsed: the tenant (the key's, else `user`) and the cache salt.
  void NameTenant(const std::string& user, Caller* caller) const;
  // Once the prompts are tokenized: charges their tokens to the key (429 over its tpm).
  static std::optional<Refusal> ChargePrompt(int64_t prompt_tokens, Caller* caller);

  const RateLimiter* limiter() const { return limiter_.get(); }

 private:
  AccessControl() = default;
  std::string api_key_;
  std::unique_ptr<ApiKeys> keys_;
  std::unique_ptr<RateLimiter> limiter_;
  CacheScope scope_ = CacheScope::kGlobal;
};

// The OpenAI-style 429 for a refusal by a key's limit.
Refusal LimitError(const LimitRefusal& refusal);

// Writes `refusal` into `res`: status, Retry-After, OpenAI error body.
void SetRefusal(httplib::Response& res, const Refusal& refusal);

}  // namespace jisu::server
