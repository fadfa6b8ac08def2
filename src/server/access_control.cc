#include "server/access_control.h"

#include <httplib.h>

namespace jisu::server {
namespace {

Refusal Unauthorized() {
  ApiError e = ApiError::BadRequest("Incorrect or missing API key (Authorization: Bearer ...)");
  e.http_status = 401;
  e.code = "invalid_api_key";
  return Refusal{e};
}

Result<CacheScope> ParseScope(const std::string& text, bool have_keys_file) {
  if (text == "auto") return have_keys_file ? CacheScope::kTenant : CacheScope::kGlobal;
  if (text == "tenant") return CacheScope::kTenant;
  if (text == "global") return CacheScope::kGlobal;
  return Status::InvalidArgument("--prefix-cache-scope must be auto, tenant or global, got '" +
                                 text + "'");
}

}  // namespace

Result<std::unique_ptr<AccessControl>> AccessControl::Create(const AccessOptions& options,
                                                             RateLimiter::Clock clock) {
  if (!options.api_key.empty() && !options.api_keys_path.empty()) {
    return Status::InvalidArgument(
        "--api-key and --api-keys cannot be combined: put every key in the --api-keys file");
  }
  std::unique_ptr<AccessControl> ac(new AccessControl());
  ac->api_key_ = options.api_key;
  if (!options.api_keys_path.empty()) {
    JISU_ASSIGN_OR_RETURN(ApiKeys keys, ApiKeys::Load(options.api_keys_path));
    std::vector<KeyLimits> limits;
    for (const ApiKey& k : keys.keys()) limits.push_back(k.limits);
    ac->keys_ = std::make_unique<ApiKeys>(std::move(keys));
    ac->limiter_ = std::make_unique<RateLimiter>(limits, std::move(clock));
  }
  JISU_ASSIGN_OR_RETURN(ac->scope_, ParseScope(options.cache_scope, ac->keys_ != nullptr));
  return ac;
}

std::optional<Refusal> AccessControl::Authorize(const std::string& authorization,
                                                bool metrics) const {
  if (keys_) {
    const int64_t k = keys_->Match(authorization);
    if (k < 0) return Unauthorized();
    if (metrics && !keys_->keys()[static_cast<size_t>(k)].may_read_metrics) {
      ApiError e = ApiError::BadRequest(
          "this API key may not read /metrics (mark it `metrics` in the keys file)");
      e.http_status = 403;
      e.code = "permission_denied";
      return Refusal{e};
    }
    return std::nullopt;
  }
  if (!api_key_.empty() && !BearerMatches(authorization, api_key_)) return Unauthorized();
  return std::nullopt;
}

std::optional<Refusal> AccessControl::Admit(const std::string& authorization, Caller* caller) {
  if (!keys_) return Authorize(authorization, /*metrics=*/false);
  const int64_t k = keys_->Match(authorization);
  if (k < 0) return Unauthorized();
  const auto index = static_cast<size_t>(k);
  if (auto refused = limiter_->Acquire(index, &caller->lease)) return LimitError(*refused);
  caller->key_index = k;
  caller->tenant = keys_->keys()[index].tenant;
  return std::nullopt;
}

void AccessControl::NameTenant(const std::string& user, Caller* caller) const {
  if (caller->key_index < 0) caller->tenant = user;
  // Length-prefixed, so a tenant's salt never spells another's. The empty tenant (no `user`)
  // is a tenant too: anonymous requests share with each other only.
  caller->cache_salt =
      scope_ == CacheScope::kTenant
          ? "tenant:" + std::to_string(caller->tenant.size()) + ":" + caller->tenant
          : std::string();
}

std::optional<Refusal> AccessControl::ChargePrompt(int64_t prompt_tokens, Caller* caller) {
  if (auto refused = caller->lease.ChargePrompt(prompt_tokens)) return LimitError(*refused);
  return std::nullopt;
}

Refusal LimitError(const LimitRefusal& r) {
  std::string message;
  std::string type = "requests";
  const std::string limit = std::to_string(r.limit);
  const std::string again = ". Please try again in " + std::to_string(r.retry_after_s) + "s.";
  switch (r.kind) {
    case LimitKind::kRequests:
      message = "Rate limit reached for requests per minute (RPM) of this API key: Limit " + limit +
                again;
      break;
    case LimitKind::kTokens:
      type = "tokens";
      message = r.never ? "Request too large for tokens per minute (TPM) of this API key: Limit " +
                              limit + ", Requested " + std::to_string(r.requested) +
                              ". Shorten the prompt."
                        : "Rate limit reached for tokens per minute (TPM) of this API key: Limit " +
                              limit + ", Requested " + std::to_string(r.requested) + again;
      break;
    case LimitKind::kConcurrency:
      message = "Too many concurrent requests for this API key: Limit " + limit + again;
      break;
  }
  ApiError e = ApiError::BadRequest(message);
  e.http_status = 429;
  e.type = type;
  e.code = "rate_limit_exceeded";
  return Refusal{e, r.never ? 0 : r.retry_after_s};
}

void SetRefusal(httplib::Response& res, const Refusal& refusal) {
  res.status = refusal.error.http_status;
  if (refusal.retry_after_s > 0) {
    res.set_header("Retry-After", std::to_string(refusal.retry_after_s));
  }
  if (refusal.error.http_status == 401) res.set_header("WWW-Authenticate", "Bearer");
  res.set_content(refusal.error.ToJson().dump() + "\n", "application/json");
}

}  // namespace jisu::server
