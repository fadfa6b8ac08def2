// LogitsTopN: a bounded min-heap of size n over one pass of the logits, then log-normalized.
#include "sampling/logits_top_n.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace jisu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();

// Strict "ranks before": higher value, then lower id.
bool RanksBefore(const TokenLogprob& a, const TokenLogprob& b) {
  return a.logprob > b.logprob || (a.logprob == b.logprob && a.id < b.id);
}

}  // namespace

float LogSumExp(const float* logits, int32_t vocab_size) {
  float max_logit = kNegInf;
  for (int32_t i = 0; i < vocab_size; ++i) max_logit = std::max(max_logit, logits[i]);
  if (max_logit == kNegInf || max_logit == kPosInf) return max_logit;
  double sum = 0.0;
  for (int32_t i = 0; i < vocab_size; ++i) {
    if (logits[i] > kNegInf) sum += std::exp(logits[i] - max_logit);
  }
  return max_logit + static_cast<float>(std::log(sum));
}

void LogitsTopN(const float* logits, int32_t vocab_size, int32_t n,
                std::vector<TokenLogprob>* out) {
  out->clear();
  const size_t k = static_cast<size_t>(std::clamp(n, 0, std::max(vocab_size, 0)));
  if (k == 0) return;
  // Heap ordered so that the front is the worst of the kept entries (logprob holds the logit
  // until the end).
  for (int32_t i = 0; i < vocab_size; ++i) {
    const float v = std::isnan(logits[i]) ? kNegInf : logits[i];
    const TokenLogprob cand{i, v};
    if (out->size() < k) {
      out->push_back(cand);
      std::push_heap(out->begin(), out->end(), RanksBefore);
    } else if (RanksBefore(cand, out->front())) {
      std::pop_heap(out->begin(), out->end(), RanksBefore);
      out->back() = cand;
      std::push_heap(out->begin(), out->end(), RanksBefore);
    }
  }
  std::sort_heap(out->begin(), out->end(), RanksBefore);
  const float lse = LogSumExp(logits, vocab_size);
  float inf_logprob = 0.0f;
  if (lse == kPosInf) {  // the +inf tokens share all the mass
    const auto count = std::count(logits, logits + vocab_size, kPosInf);
    inf_logprob = -std::log(static_cast<float>(count));
  }
  for (TokenLogprob& t : *out) {
    if (lse == kPosInf) {
      t.logprob = t.logprob == kPosInf ? inf_logprob : kNegInf;
    } else {
      t.logprob = t.logprob > kNegInf ? t.logprob - lse : kNegInf;
    }
  }
}

}  // namespace jisu
