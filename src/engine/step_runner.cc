#include "engine/step_runner.h"

#include <chrono>

namespace jisu {

namespace {

// The drafts fed to `s`: its last fed tokens, draft i following row i.
std::span<const int32_t> Drafts(const StepPlan& plan, const ScheduledSequence& s) {
  return {plan.token_ids.data() + s.token_offset + s.num_tokens - s.num_draft_tokens,
          static_cast<size_t>(s.num_draft_tokens)};
}

}  // namespace

Result<StepOutput> StepRunner::Run(const StepPlan& plan, PlanRowsFn plan_rows,
                                   FillMasksFn fill_masks, SampleFn sample) {
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
  // Masks are packed in row order of the masked sequences (plan order is row order).
  masked_seqs_.clear();
  mask_offsets_.clear();
  size_t masked_rows = 0;
  mask_seconds_ = 0;
  if (model_.CanSample()) {
    row_sampling_.assign(rows, RowSampling{});
    for (const ScheduledSequence* s : logit_seqs_) {
      const std::span<RowSampling> seq(row_sampling_.data() + s->first_logits_row,
                                       static_cast<size_t>(s->num_logits_rows));
      plan_rows(s->request_id, seq);
      for (const RowSampling& r : seq) {
        any_device |= r.on_device;
        if (r.masked != seq[0].masked || (r.masked && !r.on_device)) {
          return Status::Internal("step runner: masked rows must be a whole sequence on device");
        }
      }
      // The masks are filled per draft position: one row per draft + 1.
      if (seq[0].masked && s->num_logits_rows != s->num_draft_tokens + 1) {
        return Status::Internal("step runner: masked rows must be one per draft + 1");
      }
      if (seq[0].masked) {
        mask_offsets_.push_back(masked_rows);
        masked_rows += static_cast<size_t>(s->num_logits_rows);
        masked_seqs_.push_back(s);
      }
    }
  }
  // Called by the backend once the forward pass is queued: the masks are filled meanwhile.
  auto fill = [&](uint32_t* masks, size_t words) {
    const auto start = std::chrono::steady_clock::now();
    auto run = [&](int64_t begin, int64_t end) {
      for (int64_t q = begin; q < end; ++q) {
        const ScheduledSequence& s = *masked_seqs_[q];
        fill_masks(s.request_id, Drafts(plan, s), masks + mask_offsets_[q] * words, words);
      }
    };
    const int64_t n = static_cast<int64_t>(masked_seqs_.size());
    if (sample_pool_ && n > 1) {
      sample_pool_->ParallelFor(n, 1, run);
    } else {
      run(0, n);
    }
    mask_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (any_device) {
    device_ids_.assign(rows, 0);
    JISU_RETURN_IF_ERROR(
        model_.ForwardSample(batch, row_sampling_, fill, logits, device_ids_.data()));
  } else {
    JISU_RETURN_IF_ERROR(model_.Forward(batch, logits));
  }
  const int64_t num_seqs = static_cast<int64_t>(logit_seqs_.size());
  row_tokens_.resize(static_cast<size_t>(rows));
  num_accepted_.assign(static_cast<size_t>(num_seqs), 0);
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      const ScheduledSequence& s = *logit_seqs_[q];
      const std::span<const int32_t> drafts = Drafts(plan, s);
      int64_t n = 0;
      for (int64_t i = 0; i < s.num_logits_rows; ++i) {
        const int64_t r = s.first_logits_row + i;
        const bool device = any_device && row_sampling_[r].on_device;
        SampledToken t = sample(s.request_id, device ? nullptr : logits + r * vocab,
                                device ? device_ids_[r] : 0);
        t.request_id = s.request_id;
        row_tokens_[s.first_logits_row + n++] = t;
        if (t.finished || i == s.num_draft_tokens || t.token_id != drafts[static_cast<size_t>(i)]) {
          break;
        }
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
