// The per-key limits of api_keys.h, enforced. Requests per minute and tokens per minute are
// token buckets (a key may burst up to its per-minute allowance, which refills continuously at
// 1/60 of it per second); concurrent requests are slots held by KeyLeases.
// A generation request takes its slot and one request at admission (Acquire), its prompt's
// tokens once tokenized (KeyLease::ChargePrompt), and its completion tokens when it ends
// (KeyLease::Release): completion tokens may push the token bucket below zero, a debt the next
// requests wait out. The slot is freed when the lease is released or destroyed, whichever way
// the request ended (finished, failed, client gone). Thread-safe; time comes from an injected
// clock so tests can drive it.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "server/api_keys.h"

namespace jisu::server {

// A per-minute allowance as a token bucket, in exact integer arithmetic: one token is
// kMinuteMicros units and the bucket gains `per_minute` units each microsecond.
class TokenBucket {
 public:
  static constexpr int64_t kMinuteMicros = 60'000'000;

  // Starts full at `now_us`. per_minute in [1, 1e9].
  TokenBucket(int64_t per_minute, int64_t now_us);

  // Takes `n` tokens if the bucket holds them. Otherwise takes nothing and sets *wait_us to the
  // time until it will (n <= per_minute, or it never will).
  bool TryTake(int64_t n, int64_t now_us, int64_t* wait_us);
  // Takes `n` tokens regardless; the level may go negative.
  void Charge(int64_t n, int64_t now_us);
  // Gives back `n` tokens taken earlier (at most up to full).
  void Refund(int64_t n, int64_t now_us);
  // Whole tokens now held (negative: in debt).
  int64_t level(int64_t now_us);
  int64_t per_minute() const { return per_minute_; }

 private:
  void Refill(int64_t now_us);
  int64_t per_minute_;
  int64_t level_units_;
  int64_t last_us_;
};

enum class LimitKind { kRequests, kTokens, kConcurrency };

// Why a request was refused: which limit, its value, and when to retry (seconds, >= 1), or
// never: a prompt larger than the key's tokens per minute.
struct LimitRefusal {
  LimitKind kind = LimitKind::kRequests;
  int64_t limit = 0;
  int64_t retry_after_s = 1;
  bool never = false;
  int64_t requested = 0;  // kTokens: the prompt's tokens
};

class RateLimiter;

// One admitted request's hold on its key: a concurrency slot and its charged tokens. Movable;
// released (the slot freed) once, by Release or the destructor. A default lease holds nothing.
class KeyLease {
 public:
  KeyLease() = default;
  KeyLease(KeyLease&& other) noexcept;
  KeyLease& operator=(KeyLease&& other) noexcept;
  KeyLease(const KeyLease&) = delete;
  KeyLease& operator=(const KeyLease&) = delete;
  ~KeyLease() { Release(0); }

  // Charges the prompt's tokens against tokens per minute, or says when they will fit.
  std::optional<LimitRefusal> ChargePrompt(int64_t tokens);
  // The request never ran (refused after admission): gives its prompt tokens back.
  void RefundPrompt();
  // Frees the slot and charges the tokens generated. Only the first call counts.
  void Release(int64_t completion_tokens);

 private:
  friend class RateLimiter;
  KeyLease(RateLimiter* limiter, size_t key) : limiter_(limiter), key_(key) {}
  RateLimiter* limiter_ = nullptr;
  size_t key_ = 0;
  int64_t prompt_tokens_ = 0;
};

class RateLimiter {
 public:
  using Clock = std::function<int64_t()>;  // microseconds, monotonic
  static int64_t SteadyMicros();

  // One entry per key, in ApiKeys order.
  explicit RateLimiter(const std::vector<KeyLimits>& limits, Clock clock = SteadyMicros);

  // Admits a request of key `key`: takes a concurrency slot and one request per minute, or
  // takes nothing and says which limit refused (concurrency is checked first).
  std::optional<LimitRefusal> Acquire(size_t key, KeyLease* lease);

  // Requests of `key` holding a slot now.
  int64_t in_flight(size_t key) const;
  // Whole tokens left in `key`'s tokens-per-minute bucket (0 without that limit).
  int64_t tokens_left(size_t key);

 private:
  friend class KeyLease;
  struct KeyState {
    KeyLimits limits;
    std::optional<TokenBucket> requests;
    std::optional<TokenBucket> tokens;
    int64_t in_flight = 0;
  };
  std::optional<LimitRefusal> TakePromptTokens(size_t key, int64_t tokens);
  void GiveBackTokens(size_t key, int64_t tokens);
  void Release(size_t key, int64_t completion_tokens);

  Clock clock_;
  mutable std::mutex mu_;
  std::vector<KeyState> keys_;
};

}  // namespace jisu::server
