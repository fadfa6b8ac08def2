#include "engine/step_runner.h"

namespace jisu {

Result<StepOutput> StepRunner::Run(const StepPlan& plan, PlanRowFn plan_row, SampleFn sample) {
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
  // logits_rows lists the needs_logits sequences' last rows in plan order.
  row_requests_.clear();
  for (const ScheduledSequence& s : plan.sequences) {
    if (s.needs_logits) row_requests_.push_back(s.request_id);
  }
  const int64_t rows = static_cast<int64_t>(row_requests_.size());
  bool any_device = false;
  if (model_.CanSample()) {
    row_sampling_.assign(rows, RowSampling{});
    for (int64_t r = 0; r < rows; ++r) {
      plan_row(row_requests_[r], &row_sampling_[r]);
      any_device |= row_sampling_[r].on_device;
    }
  }
  if (any_device) {
    device_ids_.assign(rows, 0);
    JISU_RETURN_IF_ERROR(model_.ForwardSample(batch, row_sampling_, logits, device_ids_.data()));
  } else {
    JISU_RETURN_IF_ERROR(model_.Forward(batch, logits));
  }
  out.sampled.resize(rows);
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const bool device = any_device && row_sampling_[r].on_device;
      out.sampled[r] = sample(row_requests_[r], device ? nullptr : logits + r * vocab,
                              device ? device_ids_[r] : 0);
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
