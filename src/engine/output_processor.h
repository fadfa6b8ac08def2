// One request's output path: the single place where a request's logits become tokens and text.
// It owns the request's Sampler, StopMatcher and StreamDecoder, collects logprobs, checks EOS
// and decides how the request finishes. With structured output it also owns the request's
// GrammarMatcher: before each draw the row's disallowed tokens get -inf (the grammar's token
// bitmask: here for a host row, on the device for a row drawn there, FillGrammarMasks), after
// it the matcher takes the token; once the grammar is complete and nothing may
// follow, the request stops (kStop) without waiting for an EOS. The engine calls OnToken for every
// sampled or verified token of a step (in order; with drafts several per step, the last one may
// finish the request) and Emit once per step to take what the step produced; the Generator drives
// it the same way one token at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/forward_backend.h"
#include "grammar/compiled_grammar.h"
#include "grammar/matcher.h"
#include "jisu/finish_reason.h"
#include "jisu/status.h"
#include "sampling/logits_top_n.h"
#include "sampling/sampler.h"
#include "sched/step_plan.h"
#include "tokenizer/tokenizer.h"

namespace jisu {

struct SampledLogprobs {
  int32_t token_id = 0;
  float logprob = 0;
  std::vector<TokenLogprob> top;  // most likely first
};

struct EngineOutput {
  RequestId request_id = 0;
  std::vector<int32_t> token_ids;  // new tokens since the previous output
  std::string text;                // new text (never a split UTF-8 character)
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;  // set when finished
  Status error;                                      // set with FinishReason::kError
  int64_t num_prompt_tokens = 0;
  int64_t num_cached_prompt_tokens = 0;  // served from the prefix cache at admission
  double ttft_seconds = 0;               // submit -> first token (set from the first token on)
  double elapsed_seconds = 0;            // submit -> this output
  // One per token_ids entry when the request's top_logprobs >= 0.
  std::vector<SampledLogprobs> logprobs;
};

class OutputProcessor {
 public:
  // `params` must have passed Validate(). top_logprobs: -1 = off; n >= 0 = each token's
  // log-probability and the n most likely alternatives. `tokenizer` must outlive this.
  // `grammar`: params.structured compiled for this model (Engine::Submit), or null.
  OutputProcessor(const SamplingParams& params, int32_t top_logprobs, const Tokenizer& tokenizer,
                  std::span<const int32_t> eos_ids, int32_t vocab_size,
                  std::shared_ptr<const grammar::CompiledGrammar> grammar = nullptr);

  const SamplingParams& params() const { return sampler_.params(); }
  int32_t top_logprobs() const { return top_logprobs_; }
  int64_t num_output_tokens() const { return num_tokens_; }
  bool stopped() const { return stopped_; }

  // Whether the token must be chosen on the host from the full row (logprobs, penalties: they
  // need the raw row or the token history). A grammar and logit_bias do not: a device that
  // samples applies the same mask (FillGrammarMasks) and bias to the row before its draw.
  bool NeedsHostLogits() const { return top_logprobs_ >= 0 || sampler_.UsesPenalties(); }
  bool constrained() const { return matcher_ != nullptr; }
  // Structured output: the tokens allowed next, into mask[grammar vocab mask_words()] (EOS
  // only when the grammar is complete and the request does not ignore EOS).
  void FillGrammarMask(uint32_t* mask);
  // The masks of a step's rows drawn on a device: row i's (masks + i * words) is the mask after
  // drafts[0..i) (rows = drafts.size() + 1; verification reads row i only when those drafts were
  // kept). The matcher goes through the drafts and back. A draft the grammar refuses leaves the
  // rows after it all zero (never read: row i cannot pick refused draft i).
  void FillGrammarMasks(std::span<const int32_t> drafts, uint32_t* masks, size_t words);
  // Speculative decoding: cuts `drafts` before the first token the grammar would refuse (they
  // cost a verification slot and cannot be kept). The matcher is tried and rolled back.
  void TrimDrafts(std::vector<int32_t>* drafts);
  // Sets a device-drawn row's parameters (filters, logit_bias, whether it is masked), taking the
  // draw from this request's generator (so a seed gives the same tokens on every device).
  void PlanDeviceRow(RowSampling* row);

  // One token: chosen from `logits` (vocab_size floats, used as scratch) or, when logits is
  // null, `device_token`. `prompt` and `output` are the request's tokens before this step (the
  // step's earlier tokens are added for the penalties). finished: EOS or a stop string ends the
  // request after this token.
  SampledToken OnToken(float* logits, int32_t device_token, std::span<const int32_t> prompt,
                       std::span<const int32_t> output);

  // Moves the step's tokens, text and logprobs into `out` and decides the finish: kStop after an
  // EOS or stop string, else `limit` (the scheduler's kLength at max_tokens or a full context),
  // else kLength once max_tokens tokens were produced, else kNone (running). On a finish, the
  // text held back (an incomplete UTF-8 character, a possible stop-string prefix) is released
  // and out->finished, out->finish_reason are set. Returns the finish reason.
  FinishReason Emit(FinishReason limit, EngineOutput* out);

 private:
  bool IsEos(int32_t id) const;
  // Masks `logits` with the grammar (allowed tokens keep their value, the rest get -inf).
  void ApplyGrammar(float* logits);

  Sampler sampler_;
  StopMatcher stops_;
  StreamDecoder decoder_;
  std::span<const int32_t> eos_;
  int32_t vocab_;
  int32_t top_logprobs_;
  int64_t num_tokens_ = 0;
  bool stopped_ = false;              // EOS or a stop string
  bool stopped_by_text_ = false;      // a stop string (nothing is held back after it)
  std::vector<int32_t> step_tokens_;  // produced since the last Emit
  std::string step_text_;
  std::vector<SampledLogprobs> step_logprobs_;
  std::vector<float> raw_logits_;  // logprob requests: the row before Sample overwrites it
  std::vector<int32_t> history_;   // penalties after earlier tokens of the step
  std::unique_ptr<grammar::GrammarMatcher> matcher_;  // structured output, or null
  std::vector<uint32_t> mask_;                        // [mask words] scratch
  Status error_;  // the grammar could not go on (FinishReason::kError)
};

}  // namespace jisu
