// The most likely tokens of a raw logit row with their log-probabilities, for OpenAI-style
// `logprobs` / `top_logprobs` reporting (which, like vLLM, reports the model's distribution
// before penalties, temperature and filtering: call these before Sampler::Sample, which
// overwrites the logits).
// NaN logits count as -inf; if some logits are +inf, they share all the probability. Ties are
// ordered by lower id first (torch.topk leaves tie order unspecified; we pick a deterministic one).
#pragma once

#include <cstdint>
#include <vector>

namespace jisu {

struct TokenLogprob {
  int32_t id;
  float logprob;
};

// log(sum(exp(logits))) over the finite logits; -inf if none is above -inf, +inf if one is
// +inf. logprob(id) = logits[id] - LogSumExp(...).
float LogSumExp(const float* logits, int32_t vocab_size);

// Replaces *out with the min(n, vocab_size) most likely tokens (n < 0 counts as 0), highest
// log-probability first. Reuses out's storage: no allocation once it has held n entries.
// O(vocab_size log n).
void LogitsTopN(const float* logits, int32_t vocab_size, int32_t n, std::vector<TokenLogprob>* out);

}  // namespace jisu
