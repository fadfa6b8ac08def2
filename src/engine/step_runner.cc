#include "engine/step_runner.h"

namespace jisu {

Result<StepOutput> StepRunner::Run(const StepPlan& plan, PlanRowFn plan_row, SampleFn sample) {
  StepOutput out;
  if (plan.empty()) return out;
  ForwardBatch batch;
  batch.token_ids = plan.token_ids;
  batch.sequences.reserve(plan.sequences.size());
  logit_seqs_.clear();
  for (const ScheduledSequence& s : plan.sequences) {
    batch.sequences.push_back(
        BatchSequence{s.num_tokens, s.start_position, s.block_table, s.attention});
    if (s.needs_logits()) logit_seqs_.push_back(&s);
  }
  batch.logits_rows = plan.logits_rows;
  batch.options = plan.options;
  const int64_t vocab = model_.config().vocab_size;
  const int64_t rows = static_cast<int64_t>(plan.logits_rows.size());
  const size_t needed = static_cast<size_t>(rows) * static_cast<size_t>(vocab);
  float* logits = model_.HostLogitsBuffer(needed);
  if (!logits) {
    if (logits_.size() < needed) logits_.resize(needed);
    logits = logits_.data();
  }
  bool any_device = false;
  if (model_.CanSample()) {
    row_sampling_.assign(rows, RowSampling{});
    for (const ScheduledSequence* s : logit_seqs_) {
      if (s->num_logits_rows != 1) continue;
      RowSampling& row = row_sampling_[s->first_logits_row];
      plan_row(s->request_id, &row);
      any_device |= row.on_device;
    }
  }
  if (any_device) {
    device_ids_.assign(rows, 0);
    JISU_RETURN_IF_ERROR(model_.ForwardSample(batch, row_sampling_, logits, device_ids_.data()));
  } else {
    JISU_RETURN_IF_ERROR(model_.Forward(batch, logits));
  }
  const int64_t num_seqs = static_cast<int64_t>(logit_seqs_.size());
  row_tokens_.resize(static_cast<size_t>(rows));
  num_accepted_.assign(static_cast<size_t>(num_seqs), 0);
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      const ScheduledSequence& s = *logit_seqs_[q];
      // The drafts are the sequence's last fed tokens: draft i follows row i.
      const int32_t* drafts =
          plan.token_ids.data() + s.token_offset + s.num_tokens - s.num_draft_tokens;
      int64_t n = 0;
      for (int64_t i = 0; i < s.num_logits_rows; ++i) {
        const int64_t r = s.first_logits_row + i;
        const bool device = any_device && row_sampling_[r].on_device;
        SampledToken t = sample(s.request_id, device ? nullptr : logits + r * vocab,
                                device ? device_ids_[r] : 0);
        t.request_id = s.request_id;
        row_tokens_[s.first_logits_row + n++] = t;
        if (t.finished || i == s.num_draft_tokens || t.token_id != drafts[i]) break;
      }
      num_accepted_[q] = n;
    }
  };
  // A row costs ~0.1-1 ms at a 128K vocabulary (penalties, filters, stop strings): a large
  // batch sampled on one thread would take longer than the GPU's forward pass.
  if (sample_pool_ && num_seqs > 1) {
    sample_pool_->ParallelFor(num_seqs, 1, run);
  } else {
    run(0, num_seqs);
  }
  out.sampled.reserve(static_cast<size_t>(rows));
  for (int64_t q = 0; q < num_seqs; ++q) {
    const auto first = row_tokens_.begin() + logit_seqs_[q]->first_logits_row;
    out.sampled.insert(out.sampled.end(), first, first + num_accepted_[q]);
  }
  return out;
}

}  // namespace jisu
