#include "eval/perplexity.h"

#include <chrono>
#include <cmath>
#include <numeric>
#include <vector>

#include "runner/generator.h"

namespace jisu {

Result<PerplexityResult> ComputePerplexity(const Model& model, const std::string& text, int64_t ctx,
                                           int64_t max_chunks, ThreadPool& pool,
                                           const GeneratorOptions& base,
                                           const std::function<void(int64_t, double)>& on_chunk) {
  if (ctx < 2) return Status::InvalidArgument("--ctx must be at least 2");
  if (ctx > model.config().max_position) {
    return Status::OutOfRange("--ctx " + std::to_string(ctx) + " exceeds the model's context of " +
                              std::to_string(model.config().max_position));
  }
  const std::vector<int32_t> ids = model.tokenizer().Encode(text, /*add_special=*/false);
  int64_t num_chunks = static_cast<int64_t>(ids.size()) / ctx;
  if (max_chunks > 0) num_chunks = std::min(num_chunks, max_chunks);
  if (num_chunks == 0) {
    return Status::InvalidArgument("the text has " + std::to_string(ids.size()) +
                                   " tokens, fewer than one window of " + std::to_string(ctx));
  }
  GeneratorOptions options = base;
  options.max_context = ctx;
  options.prefill_chunk = ctx;
  JISU_ASSIGN_OR_RETURN(auto generator, Generator::Create(model, pool, options));
  std::vector<int64_t> positions(static_cast<size_t>(ctx - 1));
  std::iota(positions.begin(), positions.end(), 0);
  const int64_t vocab = model.config().vocab_size;

  const auto start = std::chrono::steady_clock::now();
  double nll_sum = 0;
  int64_t scored = 0;
  std::vector<int32_t> top1;
  for (int64_t c = 0; c < num_chunks; ++c) {
    std::span<const int32_t> window(ids.data() + c * ctx, static_cast<size_t>(ctx));
    JISU_ASSIGN_OR_RETURN(std::vector<float> logits, generator->PromptLogits(window, positions));
    for (int64_t p = 0; p + 1 < ctx; ++p) {
      const float* row = logits.data() + p * vocab;
      double max_logit = row[0];
      int32_t best = 0;
      for (int64_t v = 1; v < vocab; ++v) {
        if (row[v] > max_logit) {
          max_logit = row[v];
          best = static_cast<int32_t>(v);
        }
      }
      top1.push_back(best);
      double sum = 0;
      for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(row[v]) - max_logit);
      const double log_z = max_logit + std::log(sum);
      nll_sum += log_z - row[window[p + 1]];
      ++scored;
    }
    if (on_chunk) on_chunk(c, std::exp(nll_sum / scored));
  }
  PerplexityResult r;
  r.num_scored = scored;
  r.num_chunks = num_chunks;
  r.top1 = std::move(top1);
  r.mean_nll = nll_sum / scored;
  r.ppl = std::exp(r.mean_nll);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace jisu
