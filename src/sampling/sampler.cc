// Sampler: penalties, temperature, top-k / top-p / min-p filtering and the draw.
// All scratch (candidates_, counts_scratch_, dist_, bucket_mass_) is sized once for the
// vocabulary and reused, so steady-state calls do not allocate. Filtering never sorts the whole
// vocabulary: top-k is a bounded heap (k <= 256) or nth_element; min-p is a threshold pass (its
// cut is relative to the max, which no other filter removes, so applying it before top-p gives
// the same set); top-p histograms the mass over logit buckets and sorts only the bucket where
// the cumulative mass crosses top_p (small sets are simply sorted). exp() is evaluated once per
// surviving candidate.
#include "sampling/sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace jisu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();

// Higher logit first; equal logits by lower id, so every ordering is deterministic.
template <typename C>
bool Better(const C& a, const C& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Lowest id among the maxima; NaN never wins; 0 when nothing is above -inf.
// Chunks of 256: a chunk's maximum kept in 16 independent lanes (a compare and a select per
// value, which the compiler vectorizes; a NaN compares false and never enters), then the
// first chunk whose maximum beats every earlier one, and the lowest id inside it. Zen 4, one
// thread, 64 rows of 49,152 cycled: 40 us a row one value at a time, 9 us so (a 32-sequence
// CPU decode step spent ~1 ms on greedy picks).
int32_t Argmax(const float* logits, int32_t vocab_size) {
  constexpr int32_t kChunk = 256;
  constexpr int kLanes = 16;
  float best_value = kNegInf;
  int32_t best_chunk = -1;
  int32_t i = 0;
  for (; i + kChunk <= vocab_size; i += kChunk) {
    float lane[kLanes];
    for (float& v : lane) v = kNegInf;
    for (int32_t k = 0; k < kChunk; k += kLanes) {
      for (int j = 0; j < kLanes; ++j) {
        const float x = logits[i + k + j];
        lane[j] = x > lane[j] ? x : lane[j];
      }
    }
    float m = lane[0];
    for (int j = 1; j < kLanes; ++j) m = lane[j] > m ? lane[j] : m;
    if (m > best_value) {
      best_value = m;
      best_chunk = i;
    }
  }
  int32_t best = 0;
  for (int32_t k = best_chunk; best_chunk >= 0 && k < best_chunk + kChunk; ++k) {
    if (logits[k] == best_value) {  // the chunk's maximum: always found
      best = k;
      break;
    }
  }
  for (; i < vocab_size; ++i) {
    if (logits[i] > best_value) {
      best_value = logits[i];
      best = i;
    }
  }
  return best;
}

template <typename T>
void EnsureCapacity(std::vector<T>& v, size_t n) {
  if (v.capacity() < n) v.reserve(n);
}

}  // namespace

Sampler::Sampler(const SamplingParams& params) : params_(params) {
  assert(params.Validate().ok());
  uint64_t seed;
  if (params.seed.has_value()) {
    seed = *params.seed;
  } else {
    std::random_device rd;
    seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  rng_.seed(seed);
}

double Sampler::NextUniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

void Sampler::ApplyPenalties(float* logits, int32_t vocab_size, std::span<const int32_t> prompt_ids,
                             std::span<const int32_t> generated_ids) {
  const float rep = params_.repetition_penalty;
  const float freq = params_.frequency_penalty;
  const float pres = params_.presence_penalty;
  const bool use_rep = rep != 1.0f;
  const bool use_counts = freq != 0.0f || pres != 0.0f;
  if (!use_rep && !use_counts) return;
  if (counts_scratch_.size() < static_cast<size_t>(vocab_size)) {
    counts_scratch_.resize(vocab_size, 0);
  }
  int32_t* counts = counts_scratch_.data();
  auto in_range = [vocab_size](int32_t id) { return id >= 0 && id < vocab_size; };

  if (use_rep) {
    // counts doubles as a "seen" mark so each distinct id is penalized once.
    for (auto ids : {prompt_ids, generated_ids}) {
      for (int32_t id : ids) {
        if (!in_range(id) || counts[id] != 0) continue;
        counts[id] = 1;
        float& l = logits[id];
        l = l < 0.0f ? l * rep : l / rep;
      }
    }
    for (auto ids : {prompt_ids, generated_ids}) {
      for (int32_t id : ids) {
        if (in_range(id)) counts[id] = 0;
      }
    }
  }
  if (use_counts) {
    for (int32_t id : generated_ids) {
      if (in_range(id)) ++counts[id];
    }
    // Apply once per distinct id and clear its count on the way.
    for (int32_t id : generated_ids) {
      if (!in_range(id) || counts[id] == 0) continue;
      logits[id] -= freq * static_cast<float>(counts[id]);
      logits[id] -= pres;
      counts[id] = 0;
    }
  }
}

void Sampler::Filter(float* logits, int32_t vocab_size) {
  const float t = params_.temperature;
  float max_logit = kNegInf;
  int32_t max_id = 0;
  for (int32_t i = 0; i < vocab_size; ++i) {
    float v = logits[i];
    if (std::isnan(v)) {
      v = kNegInf;
    } else if (t != 1.0f) {
      v /= t;
    }
    logits[i] = v;
    if (v > max_logit) {
      max_logit = v;
      max_id = i;
    }
  }
  // Nothing finite to normalize: no valid token, or +inf dominating everything.
  if (max_logit == kNegInf || max_logit == kPosInf) {
    dist_.push_back({max_id, 1.0f});
    return;
  }

  // min-p keeps weight >= min_p (weight = prob / max prob).
  const float min_weight = params_.min_p;
  double total = 0.0;  // sum of weights of the top-k survivors: top-p's normalizer
  if (params_.top_k > 0 && params_.top_k < vocab_size) {
    SelectTopK(logits, vocab_size, static_cast<size_t>(params_.top_k));
    for (Candidate& c : candidates_) {
      c.weight = std::exp(c.logit - max_logit);
      total += c.weight;
    }
    if (min_weight > 0.0f) {
      std::erase_if(candidates_, [&](const Candidate& c) { return c.weight < min_weight; });
    }
  } else {
    for (int32_t i = 0; i < vocab_size; ++i) {
      const float v = logits[i];
      if (!(v > kNegInf)) continue;
      const float w = std::exp(v - max_logit);
      total += w;
      if (w >= min_weight) candidates_.push_back({v, w, i});
    }
  }
  assert(!candidates_.empty());  // the max itself always survives

  if (params_.top_p < 1.0f && candidates_.size() > 1) KeepTopP(total);

  double sum = 0.0;
  for (const Candidate& c : candidates_) sum += c.weight;
  for (const Candidate& c : candidates_) {
    dist_.push_back({c.id, static_cast<float>(c.weight / sum)});
  }
}

void Sampler::SelectTopK(const float* logits, int32_t vocab_size, size_t k) {
  auto better = [](const Candidate& a, const Candidate& b) { return Better(a, b); };
  constexpr size_t kHeapMaxK = 256;
  if (k <= kHeapMaxK) {
    // One pass with a bounded heap whose front is the worst kept token; most tokens are
    // rejected by a single comparison.
    for (int32_t i = 0; i < vocab_size; ++i) {
      const float v = logits[i];
      if (!(v > kNegInf)) continue;
      if (candidates_.size() < k) {
        candidates_.push_back({v, 0.0f, i});
        std::push_heap(candidates_.begin(), candidates_.end(), better);
      } else if (v > candidates_.front().logit) {  // equal value: larger id, ranks after
        std::pop_heap(candidates_.begin(), candidates_.end(), better);
        candidates_.back() = {v, 0.0f, i};
        std::push_heap(candidates_.begin(), candidates_.end(), better);
      }
    }
    if (candidates_.size() == k) {
      // Like TopKLogitsWarper, tokens equal to the k-th value survive too: the heap kept the
      // lowest ids among them, so the others come after the worst kept id.
      const Candidate worst = candidates_.front();
      for (int32_t i = worst.id + 1; i < vocab_size; ++i) {
        if (logits[i] == worst.logit) candidates_.push_back({logits[i], 0.0f, i});
      }
    }
    return;
  }
  for (int32_t i = 0; i < vocab_size; ++i) {
    if (logits[i] > kNegInf) candidates_.push_back({logits[i], 0.0f, i});
  }
  if (candidates_.size() <= k) return;
  auto begin = candidates_.begin();
  std::nth_element(begin, begin + (k - 1), candidates_.end(), better);
  const float kth = candidates_[k - 1].logit;
  auto kept_end = std::partition(begin + k, candidates_.end(),
                                 [kth](const Candidate& c) { return c.logit >= kth; });
  candidates_.erase(kept_end, candidates_.end());
}

void Sampler::KeepTopP(double total_weight) {
  // Keep a token while the mass of the tokens ranked above it is still below top_p (so the
  // token that crosses top_p is kept), which is TopPLogitsWarper's "cumulative mass from the
  // bottom <= 1 - top_p is removed" seen from the top.
  const double target = static_cast<double>(params_.top_p) * total_weight;
  auto better = [](const Candidate& a, const Candidate& b) { return Better(a, b); };
  auto walk = [&](auto first, auto last, double mass) {
    std::sort(first, last, better);
    for (auto it = first; it != last; ++it) {
      if (mass >= target) {
        candidates_.erase(it, candidates_.end());
        return;
      }
      mass += it->weight;
    }
  };
  const size_t n = candidates_.size();
  constexpr size_t kSortBelow = 1024;
  float lo = candidates_[0].logit, hi = lo;
  for (const Candidate& c : candidates_) {
    lo = std::min(lo, c.logit);
    hi = std::max(hi, c.logit);
  }
  if (n < kSortBelow || !(hi > lo)) {
    walk(candidates_.begin(), candidates_.end(), 0.0);
    return;
  }
  // Large sets: histogram the mass over logit buckets (best first), find the bucket where the
  // cumulative mass reaches the target, and sort only that bucket. Bucketing is monotone in
  // the logit, so this is the same cut as walking the fully sorted list.
  constexpr size_t kBuckets = 4096;
  const double scale = static_cast<double>(kBuckets) / (static_cast<double>(hi) - lo);
  auto bucket = [&](const Candidate& c) {
    const auto b = static_cast<size_t>((static_cast<double>(hi) - c.logit) * scale);
    return std::min(b, kBuckets - 1);
  };
  bucket_mass_.assign(kBuckets, 0.0);
  for (const Candidate& c : candidates_) bucket_mass_[bucket(c)] += c.weight;
  double before = 0.0;
  size_t cut = 0;
  for (; cut < kBuckets; ++cut) {
    if (before + bucket_mass_[cut] >= target) break;
    before += bucket_mass_[cut];
  }
  if (cut == kBuckets) return;  // rounding left the target unreached: keep everything
  auto above_end = std::partition(candidates_.begin(), candidates_.end(),
                                  [&](const Candidate& c) { return bucket(c) < cut; });
  auto cut_end = std::partition(above_end, candidates_.end(),
                                [&](const Candidate& c) { return bucket(c) == cut; });
  candidates_.erase(cut_end, candidates_.end());
  walk(above_end, candidates_.end(), before);
}

std::span<const TokenProb> Sampler::Distribution(float* logits, int32_t vocab_size,
                                                 std::span<const int32_t> prompt_ids,
                                                 std::span<const int32_t> generated_ids) {
  assert(vocab_size > 0);
  dist_.clear();
  candidates_.clear();
  if (vocab_size <= 0) return {};
  EnsureCapacity(candidates_, static_cast<size_t>(vocab_size));
  EnsureCapacity(bucket_mass_, size_t{4096});
  EnsureCapacity(dist_, static_cast<size_t>(vocab_size));
  // logit_bias first, as OpenAI and vLLM apply it: to the model's logits, before penalties.
  for (const auto& [id, bias] : params_.logit_bias) {
    if (id >= 0 && id < vocab_size) logits[id] += bias;
  }
  ApplyPenalties(logits, vocab_size, prompt_ids, generated_ids);
  if (params_.temperature == 0.0f) {
    dist_.push_back({Argmax(logits, vocab_size), 1.0f});
  } else {
    Filter(logits, vocab_size);
  }
  return dist_;
}

int32_t Sampler::Sample(float* logits, int32_t vocab_size, std::span<const int32_t> prompt_ids,
                        std::span<const int32_t> generated_ids) {
  const std::span<const TokenProb> dist =
      Distribution(logits, vocab_size, prompt_ids, generated_ids);
  if (dist.empty()) return 0;
  if (params_.temperature == 0.0f) return dist[0].id;  // greedy consumes no randomness
  const double u = NextUniform();
  double acc = 0.0;
  for (const TokenProb& tp : dist) {
    acc += tp.prob;
    if (u < acc) return tp.id;
  }
  // u landed past the rounded total: the last token that can be drawn at all.
  for (auto it = dist.rbegin(); it != dist.rend(); ++it) {
    if (it->prob > 0.0f) return it->id;
  }
  return dist[0].id;
}

void Sampler::LogSoftmax(const float* logits, int32_t vocab_size, float* out) {
  float max_logit = kNegInf;
  int32_t num_pos_inf = 0;
  for (int32_t i = 0; i < vocab_size; ++i) {
    if (logits[i] > max_logit) max_logit = logits[i];
    if (logits[i] == kPosInf) ++num_pos_inf;
  }
  if (max_logit == kNegInf) {
    std::fill(out, out + vocab_size, kNegInf);
    return;
  }
  if (max_logit == kPosInf) {  // the +inf tokens share all the mass
    const float lp = -std::log(static_cast<float>(num_pos_inf));
    for (int32_t i = 0; i < vocab_size; ++i) out[i] = logits[i] == kPosInf ? lp : kNegInf;
    return;
  }
  double sum = 0.0;
  for (int32_t i = 0; i < vocab_size; ++i) {
    if (logits[i] > kNegInf) sum += std::exp(logits[i] - max_logit);
  }
  const float log_sum = static_cast<float>(std::log(sum));
  for (int32_t i = 0; i < vocab_size; ++i) {
    const float v = logits[i];
    out[i] = v > kNegInf ? (v - max_logit) - log_sum : kNegInf;
  }
}

}  // namespace jisu
