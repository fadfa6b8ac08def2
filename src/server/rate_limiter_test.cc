#include "server/rate_limiter.h"

#include <gtest/gtest.h>

#include <random>

namespace jisu::server {
namespace {

constexpr int64_t kSecond = 1000000;

// A clock the test moves by hand.
struct FakeClock {
  int64_t now = 1000 * kSecond;
  RateLimiter::Clock fn() {
    return [this] { return now; };
  }
};

KeyLimits Limits(int64_t rpm, int64_t tpm, int64_t concurrency) {
  KeyLimits l;
  l.requests_per_minute = rpm;
  l.tokens_per_minute = tpm;
  l.max_concurrent = concurrency;
  return l;
}

TEST(TokenBucket, BurstThenRefillAtPerMinuteOverSixty) {
  TokenBucket b(2, 0);
  int64_t wait = 0;
  EXPECT_TRUE(b.TryTake(1, 0, &wait));
  EXPECT_TRUE(b.TryTake(1, 0, &wait));
  EXPECT_FALSE(b.TryTake(1, 0, &wait));
  EXPECT_EQ(wait, 30 * kSecond);  // 2 per minute: one every 30 s
  EXPECT_FALSE(b.TryTake(1, 30 * kSecond - 1, &wait));
  EXPECT_EQ(wait, 1);
  EXPECT_TRUE(b.TryTake(1, 30 * kSecond, &wait));
  // Refill stops at the burst size.
  EXPECT_EQ(b.level(3600 * kSecond), 2);
}

TEST(TokenBucket, ChargeMakesADebtThatRefillRepays) {
  TokenBucket b(600, 0);  // 10 tokens per second
  b.Charge(700, 0);
  EXPECT_EQ(b.level(0), -100);
  int64_t wait = 0;
  EXPECT_FALSE(b.TryTake(50, 0, &wait));
  EXPECT_EQ(wait, 15 * kSecond);  // 150 tokens at 10 per second
  EXPECT_EQ(b.level(10 * kSecond), 0);
  EXPECT_TRUE(b.TryTake(50, 15 * kSecond, &wait));
}

TEST(TokenBucket, MoreThanTheBurstNeverFits) {
  TokenBucket b(100, 0);
  int64_t wait = 0;
  EXPECT_FALSE(b.TryTake(101, 0, &wait));
  EXPECT_EQ(wait, -1);
  EXPECT_TRUE(b.TryTake(100, 0, &wait));
}

TEST(TokenBucket, LongIdleDoesNotOverflow) {
  TokenBucket b(1000000000, 0);
  b.Charge(3000000000LL, 0);
  EXPECT_EQ(b.level(int64_t{1} << 62), 1000000000);
}

// The wait a refusal names is exact: retrying one microsecond earlier fails, at it succeeds.
TEST(TokenBucket, TheNamedWaitIsExact) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t per_minute = 1 + static_cast<int64_t>(rng() % 100000);
    int64_t now = static_cast<int64_t>(rng() % (1000 * kSecond));
    TokenBucket b(per_minute, now);
    b.Charge(static_cast<int64_t>(rng() % (2 * per_minute + 1)), now);
    now += static_cast<int64_t>(rng() % (30 * kSecond));
    const int64_t n = 1 + static_cast<int64_t>(rng() % per_minute);
    int64_t wait = 0;
    if (b.TryTake(n, now, &wait)) continue;
    ASSERT_GT(wait, 0);
    TokenBucket copy = b;
    int64_t again = 0;
    ASSERT_FALSE(copy.TryTake(n, now + wait - 1, &again)) << trial;
    ASSERT_TRUE(b.TryTake(n, now + wait, &again)) << trial;
  }
}

TEST(RateLimiter, RequestsPerMinuteRefusesWithRetryAfter) {
  FakeClock clock;
  RateLimiter limiter({Limits(3, 0, 0)}, clock.fn());
  for (int i = 0; i < 3; ++i) {
    KeyLease lease;
    EXPECT_FALSE(limiter.Acquire(0, &lease)) << i;
  }
  KeyLease lease;
  auto refused = limiter.Acquire(0, &lease);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->kind, LimitKind::kRequests);
  EXPECT_EQ(refused->limit, 3);
  EXPECT_EQ(refused->retry_after_s, 20);
  EXPECT_EQ(limiter.in_flight(0), 0);  // a refused request holds nothing
  clock.now += 20 * kSecond;
  EXPECT_FALSE(limiter.Acquire(0, &lease));
}

TEST(RateLimiter, RetryAfterRoundsUpToWholeSeconds) {
  FakeClock clock;
  RateLimiter limiter({Limits(7, 0, 0)}, clock.fn());
  KeyLease lease;
  for (int i = 0; i < 7; ++i) ASSERT_FALSE(limiter.Acquire(0, &lease));
  auto refused = limiter.Acquire(0, &lease);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->retry_after_s, 9);  // 60/7 = 8.57 s
  clock.now += 8 * kSecond + 571428;
  EXPECT_TRUE(limiter.Acquire(0, &lease));
  clock.now += 1;
  EXPECT_FALSE(limiter.Acquire(0, &lease));
}

TEST(RateLimiter, ConcurrencySlotsAreFreedByEveryWayALeaseEnds) {
  FakeClock clock;
  RateLimiter limiter({Limits(0, 0, 2)}, clock.fn());
  KeyLease a, b, c;
  ASSERT_FALSE(limiter.Acquire(0, &a));
  ASSERT_FALSE(limiter.Acquire(0, &b));
  auto refused = limiter.Acquire(0, &c);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->kind, LimitKind::kConcurrency);
  EXPECT_EQ(refused->retry_after_s, 1);
  EXPECT_EQ(limiter.in_flight(0), 2);

  a.Release(5);  // finished
  a.Release(5);  // a second release is a no-op
  EXPECT_EQ(limiter.in_flight(0), 1);
  {
    KeyLease moved = std::move(b);  // moved into a request that then ends (error, disconnect)
    b.Release(0);                   // the moved-from lease holds nothing
    EXPECT_EQ(limiter.in_flight(0), 1);
  }
  EXPECT_EQ(limiter.in_flight(0), 0);
  ASSERT_FALSE(limiter.Acquire(0, &c));
  KeyLease d;
  ASSERT_FALSE(limiter.Acquire(0, &d));
  c = std::move(d);  // assigning over a held lease releases it
  EXPECT_EQ(limiter.in_flight(0), 1);
}

TEST(RateLimiter, TokensPerMinuteChargesPromptsThenCompletions) {
  FakeClock clock;
  RateLimiter limiter({Limits(0, 1200, 0)}, clock.fn());  // 20 tokens per second
  KeyLease first;
  ASSERT_FALSE(limiter.Acquire(0, &first));
  EXPECT_FALSE(first.ChargePrompt(1000));
  EXPECT_EQ(limiter.tokens_left(0), 200);
  first.Release(300);  // its completion: the bucket is 100 tokens in debt
  EXPECT_EQ(limiter.tokens_left(0), -100);

  KeyLease second;
  ASSERT_FALSE(limiter.Acquire(0, &second));
  auto refused = second.ChargePrompt(100);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->kind, LimitKind::kTokens);
  EXPECT_EQ(refused->requested, 100);
  EXPECT_EQ(refused->retry_after_s, 10);  // 200 tokens at 20 per second
  EXPECT_FALSE(refused->never);
  clock.now += 10 * kSecond;
  EXPECT_FALSE(second.ChargePrompt(100));

  auto never = second.ChargePrompt(1201);
  ASSERT_TRUE(never);
  EXPECT_TRUE(never->never);
  EXPECT_EQ(never->requested, 1201);
}

TEST(RateLimiter, RefundGivesBackAPromptThatNeverRan) {
  FakeClock clock;
  RateLimiter limiter({Limits(0, 600, 0)}, clock.fn());
  KeyLease lease;
  ASSERT_FALSE(limiter.Acquire(0, &lease));
  ASSERT_FALSE(lease.ChargePrompt(500));
  EXPECT_EQ(limiter.tokens_left(0), 100);
  lease.RefundPrompt();
  EXPECT_EQ(limiter.tokens_left(0), 600);
  lease.RefundPrompt();  // once only
  EXPECT_EQ(limiter.tokens_left(0), 600);
}

TEST(RateLimiter, KeysAreIndependent) {
  FakeClock clock;
  RateLimiter limiter({Limits(1, 0, 1), Limits(0, 0, 0)}, clock.fn());
  KeyLease a, b;
  ASSERT_FALSE(limiter.Acquire(0, &a));
  EXPECT_TRUE(limiter.Acquire(0, &b));  // key 0: concurrency 1 reached
  for (int i = 0; i < 100; ++i) {
    KeyLease l;
    EXPECT_FALSE(limiter.Acquire(1, &l));  // key 1 has no limits
  }
  a.Release(0);
  auto refused = limiter.Acquire(0, &b);  // slot free, but 1 request per minute is spent
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->kind, LimitKind::kRequests);
  EXPECT_EQ(refused->retry_after_s, 60);
}

TEST(RateLimiter, UnlimitedKeyLeaseWithoutTokenLimitIgnoresCharges) {
  FakeClock clock;
  RateLimiter limiter({Limits(0, 0, 0)}, clock.fn());
  KeyLease lease;
  ASSERT_FALSE(limiter.Acquire(0, &lease));
  EXPECT_FALSE(lease.ChargePrompt(1000000000));
  EXPECT_EQ(limiter.in_flight(0), 1);
  KeyLease none;  // a default lease (no keys configured) refuses nothing, releases nothing
  EXPECT_FALSE(none.ChargePrompt(5));
  none.Release(5);
  EXPECT_EQ(limiter.in_flight(0), 1);
}

}  // namespace
}  // namespace jisu::server
