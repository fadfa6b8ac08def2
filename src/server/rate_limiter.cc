#include "server/rate_limiter.h"

#include <cassert>
#include <chrono>
#include <utility>

namespace jisu::server {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t RetryAfterSeconds(int64_t wait_us) {
  return std::max<int64_t>(1, CeilDiv(wait_us, 1000000));
}

}  // namespace

// ---- TokenBucket ------------------------------------------------------------------------------

TokenBucket::TokenBucket(int64_t per_minute, int64_t now_us)
    : per_minute_(per_minute), level_units_(per_minute * kMinuteMicros), last_us_(now_us) {
  assert(per_minute >= 1 && per_minute <= 1000000000);
}

void TokenBucket::Refill(int64_t now_us) {
  if (now_us <= last_us_) return;
  const int64_t elapsed = now_us - last_us_;
  last_us_ = now_us;
  const int64_t full = per_minute_ * kMinuteMicros;
  // Compared before multiplying, so a long idle time cannot overflow.
  if (elapsed >= CeilDiv(full - level_units_, per_minute_)) {
    level_units_ = full;
  } else {
    level_units_ += elapsed * per_minute_;
  }
}

bool TokenBucket::TryTake(int64_t n, int64_t now_us, int64_t* wait_us) {
  Refill(now_us);
  const int64_t need = n * kMinuteMicros;
  if (level_units_ >= need) {
    level_units_ -= need;
    return true;
  }
  *wait_us = n > per_minute_ ? -1 : CeilDiv(need - level_units_, per_minute_);
  return false;
}

void TokenBucket::Charge(int64_t n, int64_t now_us) {
  Refill(now_us);
  level_units_ -= n * kMinuteMicros;
}

void TokenBucket::Refund(int64_t n, int64_t now_us) {
  Refill(now_us);
  level_units_ = std::min(level_units_ + n * kMinuteMicros, per_minute_ * kMinuteMicros);
}

int64_t TokenBucket::level(int64_t now_us) {
  Refill(now_us);
  // Floor division, also for a debt.
  return level_units_ >= 0 ? level_units_ / kMinuteMicros : -CeilDiv(-level_units_, kMinuteMicros);
}

// ---- KeyLease ---------------------------------------------------------------------------------

KeyLease::KeyLease(KeyLease&& other) noexcept
    : limiter_(std::exchange(other.limiter_, nullptr)),
      key_(other.key_),
      prompt_tokens_(other.prompt_tokens_) {}

KeyLease& KeyLease::operator=(KeyLease&& other) noexcept {
  if (this != &other) {
    Release(0);
    limiter_ = std::exchange(other.limiter_, nullptr);
    key_ = other.key_;
    prompt_tokens_ = other.prompt_tokens_;
  }
  return *this;
}

std::optional<LimitRefusal> KeyLease::ChargePrompt(int64_t tokens) {
  if (limiter_ == nullptr) return std::nullopt;
  auto refused = limiter_->TakePromptTokens(key_, tokens);
  if (!refused) prompt_tokens_ += tokens;
  return refused;
}

void KeyLease::RefundPrompt() {
  if (limiter_ == nullptr || prompt_tokens_ == 0) return;
  limiter_->GiveBackTokens(key_, prompt_tokens_);
  prompt_tokens_ = 0;
}

void KeyLease::Release(int64_t completion_tokens) {
  if (limiter_ == nullptr) return;
  limiter_->Release(key_, completion_tokens);
  limiter_ = nullptr;
}

// ---- RateLimiter ------------------------------------------------------------------------------

int64_t RateLimiter::SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

RateLimiter::RateLimiter(const std::vector<KeyLimits>& limits, Clock clock)
    : clock_(std::move(clock)) {
  const int64_t now = clock_();
  keys_.resize(limits.size());
  for (size_t i = 0; i < limits.size(); ++i) {
    KeyState& k = keys_[i];
    k.limits = limits[i];
    if (k.limits.requests_per_minute > 0) k.requests.emplace(k.limits.requests_per_minute, now);
    if (k.limits.tokens_per_minute > 0) k.tokens.emplace(k.limits.tokens_per_minute, now);
  }
}

std::optional<LimitRefusal> RateLimiter::Acquire(size_t key, KeyLease* lease) {
  assert(key < keys_.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    KeyState& k = keys_[key];
    if (k.limits.max_concurrent > 0 && k.in_flight >= k.limits.max_concurrent) {
      // A slot frees when some request ends, which cannot be known ahead: retry in a second.
      return LimitRefusal{LimitKind::kConcurrency, k.limits.max_concurrent, 1};
    }
    int64_t wait_us = 0;
    if (k.requests && !k.requests->TryTake(1, clock_(), &wait_us)) {
      return LimitRefusal{LimitKind::kRequests, k.limits.requests_per_minute,
                          RetryAfterSeconds(wait_us)};
    }
    ++k.in_flight;
  }
  // Outside the lock: a lease already in *lease is released by the assignment.
  *lease = KeyLease(this, key);
  return std::nullopt;
}

std::optional<LimitRefusal> RateLimiter::TakePromptTokens(size_t key, int64_t tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  KeyState& k = keys_[key];
  if (!k.tokens) return std::nullopt;
  int64_t wait_us = 0;
  if (k.tokens->TryTake(tokens, clock_(), &wait_us)) return std::nullopt;
  LimitRefusal r{LimitKind::kTokens, k.limits.tokens_per_minute, 0};
  r.requested = tokens;
  if (wait_us < 0) {
    r.never = true;
  } else {
    r.retry_after_s = RetryAfterSeconds(wait_us);
  }
  return r;
}

void RateLimiter::GiveBackTokens(size_t key, int64_t tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  KeyState& k = keys_[key];
  if (k.tokens) k.tokens->Refund(tokens, clock_());
}

void RateLimiter::Release(size_t key, int64_t completion_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  KeyState& k = keys_[key];
  assert(k.in_flight > 0);
  --k.in_flight;
  if (k.tokens && completion_tokens > 0) k.tokens->Charge(completion_tokens, clock_());
}

int64_t RateLimiter::in_flight(size_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return keys_[key].in_flight;
}

int64_t RateLimiter::tokens_left(size_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  KeyState& k = keys_[key];
  return k.tokens ? k.tokens->level(clock_()) : 0;
}

}  // namespace jisu::server
