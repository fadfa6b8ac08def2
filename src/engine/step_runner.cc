#include "engine/step_runner.h"

namespace jisu {

Result<StepOutput> StepRunner::Run(const StepPlan& plan,
                                   FunctionRef<SampledToken(RequestId, float*)> sample) {
  StepOutput out;
  if (plan.empty()) return out;
  ForwardBatch batch;
  batch.token_ids = plan.token_ids;
  batch.sequences.reserve(plan.sequences.size());
  for (const ScheduledSequence& s : plan.sequences) {
    batch.sequences.push_back(BatchSequence{s.num_tokens, s.start_position, s.block_table});
  }
  batch.logits_rows = plan.logits_rows;
  const int64_t vocab = model_.config().vocab_size;
  const size_t needed = plan.logits_rows.size() * static_cast<size_t>(vocab);
  if (logits_.size() < needed) logits_.resize(needed);
  JISU_RETURN_IF_ERROR(model_.Forward(batch, logits_.data()));
  // logits_rows lists the needs_logits sequences' last rows in plan order.
  size_t row = 0;
  for (const ScheduledSequence& s : plan.sequences) {
    if (!s.needs_logits) continue;
    out.sampled.push_back(sample(s.request_id, logits_.data() + row * vocab));
    out.sampled.back().request_id = s.request_id;
    ++row;
  }
  return out;
}

}  // namespace jisu
