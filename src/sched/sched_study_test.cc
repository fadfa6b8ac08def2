#include "sched/sched_study.h"

#include <gtest/gtest.h>

namespace jisu {
namespace {

CapacityStudyOptions Small() {
  CapacityStudyOptions o;
  o.num_requests = 200;
  o.num_blocks = 2048;
  return o;
}

TEST(SchedStudy, CapacityStudyIsDeterministicAndPreallocNeverPreempts) {
  CapacityStudyOptions o = Small();
  const CapacityStudyResult a = RunCapacityStudy(o);
  const CapacityStudyResult b = RunCapacityStudy(o);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.peak_running, b.peak_running);
  EXPECT_EQ(a.preemptions, b.preemptions);
  o.kv_prealloc = true;
  const CapacityStudyResult p = RunCapacityStudy(o);
  EXPECT_EQ(p.preemptions, 0);
  EXPECT_EQ(p.generated_tokens, a.generated_tokens);  // same work, however scheduled
  // max_model_len reserved per request: 2048 blocks of 16 hold exactly 8 sequences.
  EXPECT_EQ(p.peak_running, 8);
  EXPECT_GT(a.mean_running, p.mean_running);
}

}  // namespace
}  // namespace jisu
