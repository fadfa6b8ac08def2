#include "engine/output_processor.h"

#include <algorithm>
#include <limits>

namespace jisu {

OutputProcessor::OutputProcessor(const SamplingParams& params, int32_t top_logprobs,
                                 const Tokenizer& tokenizer, std::span<const int32_t> eos_ids,
                                 int32_t vocab_size)
    : sampler_(params),
      stops_(params.stop),
      decoder_(tokenizer),
      eos_(eos_ids),
      vocab_(vocab_size),
      top_logprobs_(top_logprobs) {}

void OutputProcessor::PlanDeviceRow(RowSampling* row) {
  const SamplingParams& p = sampler_.params();
  row->on_device = true;
  row->temperature = p.temperature;
  row->top_k = p.top_k;
  row->top_p = p.top_p;
  row->min_p = p.min_p;
  row->u = sampler_.TakeDraw();
}

SampledToken OutputProcessor::OnToken(float* logits, int32_t device_token,
                                      std::span<const int32_t> prompt,
                                      std::span<const int32_t> output) {
  SampledToken t;
  SampledLogprobs lp;
  float lse = 0;
  const bool want_logprobs = top_logprobs_ >= 0 && logits;
  if (want_logprobs) {
    lse = LogSumExp(logits, vocab_);
    LogitsTopN(logits, vocab_, top_logprobs_, &lp.top);
    raw_logits_.assign(logits, logits + vocab_);
  }
  // After earlier tokens of this step (accepted drafts), the penalties' history includes them.
  std::span<const int32_t> history = output;
  if (!step_tokens_.empty() && sampler_.UsesPenalties()) {
    history_.assign(output.begin(), output.end());
    history_.insert(history_.end(), step_tokens_.begin(), step_tokens_.end());
    history = history_;
  }
  t.token_id = logits ? sampler_.Sample(logits, vocab_, prompt, history) : device_token;
  if (want_logprobs) {
    const float raw = raw_logits_[static_cast<size_t>(t.token_id)];
    lp.token_id = t.token_id;
    lp.logprob = raw > -std::numeric_limits<float>::infinity()
                     ? raw - lse
                     : -std::numeric_limits<float>::infinity();
    step_logprobs_.push_back(std::move(lp));
  }
  if (!sampler_.params().ignore_eos &&
      std::find(eos_.begin(), eos_.end(), t.token_id) != eos_.end()) {
    t.finished = true;
    stopped_ = true;
  } else {
    StopMatcher::Output o = stops_.Push(decoder_.Push(t.token_id));
    step_text_ += o.text;
    if (o.stopped) {
      t.finished = true;
      stopped_ = true;
      stopped_by_text_ = true;
    }
  }
  step_tokens_.push_back(t.token_id);
  ++num_tokens_;
  return t;
}

FinishReason OutputProcessor::Emit(FinishReason limit, EngineOutput* out) {
  out->token_ids.swap(step_tokens_);
  step_tokens_.clear();
  out->text.swap(step_text_);
  step_text_.clear();
  out->logprobs.swap(step_logprobs_);
  step_logprobs_.clear();
  FinishReason reason = FinishReason::kNone;
  if (stopped_) {
    reason = FinishReason::kStop;
  } else if (limit != FinishReason::kNone) {
    reason = limit;
  } else if (num_tokens_ >= sampler_.params().max_tokens) {
    reason = FinishReason::kLength;
  }
  if (reason == FinishReason::kNone) return reason;
  if (!stopped_by_text_) {  // release held-back text (incomplete UTF-8, stop prefixes)
    StopMatcher::Output rest = stops_.Push(decoder_.Flush());
    out->text += rest.text;
    if (rest.stopped) {
      stopped_by_text_ = true;
    } else {
      out->text += stops_.Flush();
    }
  }
  out->finished = true;
  out->finish_reason = reason;
  return reason;
}

}  // namespace jisu
