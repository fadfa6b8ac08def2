// Step keys (scheduler.h): requests whose options need different steps (weight set, matmul path)
// never share one, each key is served within as many steps as there are keys (no starvation),
// a key that cannot run gives way without stalling the engine, and the prefix cache separates
// K/V computed under other options.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sched/scheduler.h"
#include "sched/scheduler_test_harness.h"

namespace jisu {
namespace {

using testing::Iota;
using testing::ReferenceGenerate;
using testing::SchedulerHarness;

SchedulerOptions KeyOptions() {
  SchedulerOptions o;
  o.max_batch_tokens = 32;
  o.max_seqs = 8;
  o.max_queue = 64;
  o.block_size = 4;
  o.max_model_len = 128;
  return o;
}

RequestOptions WithMatmul(MatmulPath path) {
  RequestOptions o;
  o.matmul = path;
  return o;
}

// Every request's key, for checking plans.
struct Keys {
  std::map<RequestId, StepOptions> of;
  void Add(RequestId id, const RequestOptions& o) { of[id] = StepOptionsOf(o); }
  // Every sequence of the plan has the plan's key.
  bool Uniform(const StepPlan& p) const {
    for (const ScheduledSequence& s : p.sequences) {
      if (!(of.at(s.request_id) == p.options)) return false;
    }
    return true;
  }
};

TEST(SchedulerKeys, DifferentKeysNeverShareAStepAndBothFinish) {
  SchedulerHarness h(KeyOptions(), 128, PrefixCacheMode::kOff);
  Keys keys;
  const RequestOptions paths[] = {WithMatmul(MatmulPath::kFloat), WithMatmul(MatmulPath::kInt8),
                                  RequestOptions{}};
  for (RequestId id = 0; id < 9; ++id) {
    RequestOptions o = paths[id % 3];
    o.sampling = id % 2 ? SamplingPlacement::kHost : SamplingPlacement::kAuto;  // per row
    keys.Add(id, o);
    ASSERT_TRUE(h.AddWithOptions(id, Iota(5 + id, 3 * id), 6, o).ok());
  }
  std::set<int> seen;
  while (!h.sched->idle()) {
    const StepPlan p = h.Step();
    ASSERT_FALSE(p.empty());
    EXPECT_TRUE(keys.Uniform(p)) << "step " << h.steps;
    seen.insert(static_cast<int>(p.options.matmul));
    ASSERT_LT(h.steps, 500);
  }
  EXPECT_EQ(seen.size(), 3u);
  for (RequestId id = 0; id < 9; ++id) {
    EXPECT_EQ(h.done.at(id).output_tokens, ReferenceGenerate(Iota(5 + id, 3 * id), 6, 128, false))
        << id;
  }
}

TEST(SchedulerKeys, SamplingAndSpeculationDoNotSplitSteps) {
  SchedulerHarness h(KeyOptions(), 128, PrefixCacheMode::kOff);
  RequestOptions host, spec;
  host.sampling = SamplingPlacement::kHost;
  spec.speculative = 3;
  ASSERT_TRUE(h.AddWithOptions(1, Iota(6), 4, host).ok());
  ASSERT_TRUE(h.AddWithOptions(2, Iota(6, 50), 4, spec).ok());
  EXPECT_EQ(h.Step().sequences.size(), 2u);
}

// Keys take turns by how long their requests waited: while float requests keep arriving, an
// int8 request waits at most one step after its arrival, and the keys alternate.
TEST(SchedulerKeys, NoKeyStarves) {
  SchedulerHarness h(KeyOptions(), 256, PrefixCacheMode::kOff);
  Keys keys;
  RequestId next = 0;
  auto add = [&](MatmulPath path, int64_t max_tokens) {
    const RequestOptions o = WithMatmul(path);
    keys.Add(next, o);
    EXPECT_TRUE(
        h.AddWithOptions(next, Iota(4, 10 * static_cast<int32_t>(next)), max_tokens, o).ok());
    return next++;
  };
  add(MatmulPath::kFloat, 60);
  add(MatmulPath::kFloat, 60);
  h.Step();
  h.Step();
  const RequestId late = add(MatmulPath::kInt8, 5);
  std::map<RequestId, int64_t> first_step;
  MatmulPath last = MatmulPath::kAuto;
  int switches = 0;
  for (int i = 0; i < 40 && !h.sched->idle(); ++i) {
    if (i % 3 == 0) add(MatmulPath::kFloat, 8);  // a steady stream of the other key
    const StepPlan p = h.Step();
    ASSERT_TRUE(keys.Uniform(p));
    switches += p.options.matmul != last;
    last = p.options.matmul;
    for (const ScheduledSequence& s : p.sequences) first_step.emplace(s.request_id, h.steps);
  }
  ASSERT_TRUE(first_step.count(late));
  EXPECT_LE(first_step.at(late), 4);  // arrived after step 2, served by step 4
  EXPECT_TRUE(h.done.count(late));
  EXPECT_GE(switches, 6);  // turns, not one key until the other's requests are all done
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.size(), static_cast<size_t>(next));
}

// The oldest key cannot run (max_seqs is full of the other key's requests): the other key's
// step runs instead, without admitting anyone past the blocked request, so nothing stalls and
// the blocked request gets the first free seat.
TEST(SchedulerKeys, ABlockedKeyGivesWayWithoutOvertaking) {
  SchedulerOptions o = KeyOptions();
  o.max_seqs = 2;
  SchedulerHarness h(o, 128, PrefixCacheMode::kOff);
  const RequestOptions f = WithMatmul(MatmulPath::kFloat), i8 = WithMatmul(MatmulPath::kInt8);
  ASSERT_TRUE(h.AddWithOptions(1, Iota(4), 6, f).ok());
  ASSERT_TRUE(h.AddWithOptions(2, Iota(4, 20), 3, f).ok());
  h.Step();  // both float requests run
  ASSERT_TRUE(h.AddWithOptions(3, Iota(4, 40), 2, i8).ok());
  ASSERT_TRUE(h.AddWithOptions(4, Iota(4, 60), 2, f).ok());  // behind the int8 one
  while (!h.done.count(2)) {
    const StepPlan p = h.Step();
    ASSERT_FALSE(p.empty());
    EXPECT_EQ(p.options.matmul, MatmulPath::kFloat);
    for (const ScheduledSequence& s : p.sequences) EXPECT_NE(s.request_id, 4);
  }
  const StepPlan p = h.Step();  // a seat is free: the int8 request, first in line
  ASSERT_EQ(p.sequences.size(), 1u);
  EXPECT_EQ(p.sequences[0].request_id, 3);
  ASSERT_TRUE(h.RunAll());
  EXPECT_EQ(h.done.size(), 4u);
}

// Same prompt under another matmul path: no cached blocks (its K/V would differ); under the
// same path: the cached prefix.
TEST(SchedulerKeys, PrefixCacheKeysIncludeTheOptions) {
  SchedulerHarness h(KeyOptions(), 64, PrefixCacheMode::kFull);
  const std::vector<int32_t> prompt = Iota(14, 7);  // 3 full blocks of 4 + 2
  ASSERT_TRUE(h.AddWithOptions(1, prompt, 1, WithMatmul(MatmulPath::kInt8)).ok());
  ASSERT_TRUE(h.RunAll());
  ASSERT_TRUE(h.AddWithOptions(2, prompt, 1, WithMatmul(MatmulPath::kFloat)).ok());
  StepPlan p = h.Step();
  ASSERT_EQ(p.sequences.size(), 1u);
  EXPECT_EQ(p.sequences[0].start_position, 0);
  ASSERT_TRUE(h.RunAll());
  for (RequestId id : {3, 4}) {
    const MatmulPath path = id == 3 ? MatmulPath::kInt8 : MatmulPath::kFloat;
    ASSERT_TRUE(h.AddWithOptions(id, prompt, 1, WithMatmul(path)).ok());
    p = h.Step();
    ASSERT_EQ(p.sequences.size(), 1u);
    EXPECT_EQ(p.sequences[0].start_position, 12) << MatmulPathName(path);
    EXPECT_EQ(p.options.matmul, path);
  }
  // Sampling placement changes no K/V: it shares.
  RequestOptions host = WithMatmul(MatmulPath::kFloat);
  host.sampling = SamplingPlacement::kHost;
  ASSERT_TRUE(h.AddWithOptions(5, prompt, 1, host).ok());
  EXPECT_EQ(h.Step().sequences[0].start_position, 12);
}

TEST(SchedulerKeys, AttentionGoesWithEachSequence) {
  SchedulerHarness h(KeyOptions(), 64, PrefixCacheMode::kOff);
  RequestOptions dense;
  dense.attention = AttentionVariant::kDense;
  ASSERT_TRUE(h.AddWithOptions(1, Iota(5), 2, dense).ok());
  ASSERT_TRUE(h.AddWithOptions(2, Iota(5, 30), 2, RequestOptions{}).ok());
  const StepPlan p = h.Step();
  ASSERT_EQ(p.sequences.size(), 2u);  // attention is per sequence, not part of the step key
  EXPECT_EQ(p.sequences[0].attention, AttentionVariant::kDense);
  EXPECT_EQ(p.sequences[1].attention, AttentionVariant::kAuto);
}

}  // namespace
}  // namespace jisu
