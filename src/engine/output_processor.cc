#include "engine/output_processor.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "jisu/request_options.h"

namespace jisu {

OutputProcessor::OutputProcessor(const SamplingParams& params, int32_t top_logprobs,
                                 const Tokenizer& tokenizer, std::span<const int32_t> eos_ids,
                                 int32_t vocab_size,
                                 std::shared_ptr<const grammar::CompiledGrammar> grammar)
    : sampler_(params),
      stops_(params.stop),
      decoder_(tokenizer),
      eos_(eos_ids),
      vocab_(vocab_size),
      top_logprobs_(top_logprobs) {
  if (grammar) {
    mask_.resize(grammar->vocab().mask_words());
    // The rollback window covers the longest speculative window (TrimDrafts).
    grammar::MatcherOptions o;
    o.max_rollback = static_cast<int>(RequestOptions::kMaxSpeculative) + 1;
    matcher_ = std::make_unique<grammar::GrammarMatcher>(std::move(grammar), o);
  }
}

bool OutputProcessor::IsEos(int32_t id) const {
  return std::find(eos_.begin(), eos_.end(), id) != eos_.end();
}

void OutputProcessor::FillGrammarMask(uint32_t* mask) {
  matcher_->FillMask(mask);
  if (sampler_.params().ignore_eos) {
    for (int32_t id : eos_) {
      if (id >= 0 && id < vocab_) mask[id >> 5] &= ~(1u << (id & 31));
    }
  }
}

void OutputProcessor::FillGrammarMasks(std::span<const int32_t> drafts, uint32_t* masks,
                                       size_t words) {
  assert(words == mask_.size());
  const size_t rows = drafts.size() + 1;
  int accepted = 0;
  size_t filled = 0;
  while (filled < rows) {
    FillGrammarMask(masks + filled * words);
    ++filled;
    if (filled == rows || !matcher_->AcceptToken(drafts[filled - 1])) break;
    ++accepted;
  }
  std::fill(masks + filled * words, masks + rows * words, 0u);
  // Drafts are at most kMaxSpeculative (TrimDrafts), within the matcher's rollback window.
  [[maybe_unused]] const bool rolled_back = matcher_->Rollback(accepted);
  assert(rolled_back);
}

void OutputProcessor::ApplyGrammar(float* logits) {
  FillGrammarMask(mask_.data());
  const size_t words = mask_.size();
  for (size_t w = 0; w < words; ++w) {
    const uint32_t m = mask_[w];
    if (m == ~0u) continue;
    const int32_t base = static_cast<int32_t>(w * 32);
    for (int32_t b = 0; b < 32 && base + b < vocab_; ++b) {
      if (!((m >> b) & 1)) logits[base + b] = -std::numeric_limits<float>::infinity();
    }
  }
}

void OutputProcessor::TrimDrafts(std::vector<int32_t>* drafts) {
  if (!matcher_) return;
  const size_t limit =
      std::min(drafts->size(), static_cast<size_t>(RequestOptions::kMaxSpeculative));
  size_t n = 0;
  while (n < limit) {
    const int32_t id = (*drafts)[n];
    if (sampler_.params().ignore_eos && IsEos(id)) break;
    if (!matcher_->AcceptToken(id)) break;
    ++n;
  }
  matcher_->Rollback(static_cast<int>(n));
  drafts->resize(n);
}

void OutputProcessor::PlanDeviceRow(RowSampling* row) {
  const SamplingParams& p = sampler_.params();
  row->on_device = true;
  row->temperature = p.temperature;
  row->top_k = p.top_k;
  row->top_p = p.top_p;
  row->min_p = p.min_p;
  row->u = sampler_.TakeDraw();
  row->masked = matcher_ != nullptr;
  row->logit_bias = p.logit_bias;
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
  if (matcher_ && logits) ApplyGrammar(logits);
  t.token_id = logits ? sampler_.Sample(logits, vocab_, prompt, history) : device_token;
  if (want_logprobs) {
    const float raw = raw_logits_[static_cast<size_t>(t.token_id)];
    lp.token_id = t.token_id;
    lp.logprob = raw > -std::numeric_limits<float>::infinity()
                     ? raw - lse
                     : -std::numeric_limits<float>::infinity();
    step_logprobs_.push_back(std::move(lp));
  }
  if (matcher_ && !matcher_->AcceptToken(t.token_id)) {
    // Only when no token of the vocabulary continues the grammar (the row was all -inf) or a
    // matcher bound was hit: the request ends with an error rather than invalid output.
    error_ = !matcher_->error().ok()
                 ? matcher_->error()
                 : Status::InvalidArgument(
                       "structured output: no token of the vocabulary can continue the grammar");
    t.finished = true;
    stopped_ = true;
    stopped_by_text_ = true;  // nothing held back is released after an error
  } else if (!sampler_.params().ignore_eos && IsEos(t.token_id)) {
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
    // The grammar is complete and nothing may follow: stop here (EOS is the only choice left).
    if (!t.finished && matcher_ && matcher_->IsTerminated()) {
      t.finished = true;
      stopped_ = true;
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
  if (!error_.ok()) {
    reason = FinishReason::kError;
    out->error = error_;
  } else if (stopped_) {
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
