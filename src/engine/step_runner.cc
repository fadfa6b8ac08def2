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
  float* logits = model_.HostLogitsBuffer(needed);
  if (!logits) {
    if (logits_.size() < needed) logits_.resize(needed);
    logits = logits_.data();
  }
  JISU_RETURN_IF_ERROR(model_.Forward(batch, logits));
  // logits_rows lists the needs_logits sequences' last rows in plan order.
  row_requests_.clear();
  for (const ScheduledSequence& s : plan.sequences) {
    if (s.needs_logits) row_requests_.push_back(s.request_id);
  }
  const int64_t rows = static_cast<int64_t>(row_requests_.size());
  out.sampled.resize(rows);
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      out.sampled[r] = sample(row_requests_[r], logits + r * vocab);
      out.sampled[r].request_id = row_requests_[r];
    }
  };
  // A row costs ~0.1-1 ms at a 128K vocabulary (penalties, filters, stop strings): a large
  // batch sampled on one thread would take longer than the GPU's forward pass.
  if (sample_pool_ && rows > 1) {
    sample_pool_->ParallelFor(rows, 1, run);
  } else {
    run(0, rows);
  }
  return out;
}

}  // namespace jisu
