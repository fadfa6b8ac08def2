#include "runner/generator.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "engine/output_processor.h"
#include "tokenizer/tokenizer.h"

namespace jisu {
namespace {

double Now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

double GenerationTimings::PromptTokensPerSecond() const {
  return prompt_seconds > 0 ? prompt_tokens / prompt_seconds : 0;
}
double GenerationTimings::DecodeTokensPerSecond() const {
  // The first generated token comes out of the prefill pass.
  return decode_seconds > 0 && generated_tokens > 1 ? (generated_tokens - 1) / decode_seconds : 0;
}

Generator::Generator(const Model& model, ThreadPool& pool, const GeneratorOptions& options)
    : model_(model),
      options_(options),
      weights_(model.weights(), pool, CpuWeightsOptions{options.interleave, options.matmul}),
      transformer_(model.config(), weights_.weights(), pool) {}

Result<std::unique_ptr<Generator>> Generator::Create(const Model& model, ThreadPool& pool,
                                                     const GeneratorOptions& options) {
  if (!model.has_weights()) return Status::InvalidArgument("the model has no weights");
  if (options.prefill_chunk <= 0) return Status::InvalidArgument("prefill chunk must be positive");
  std::unique_ptr<Generator> g(new Generator(model, pool, options));
  const ModelConfig& c = model.config();
  g->max_context_ = options.max_context > 0 ? std::min(options.max_context, c.max_position)
                                            : std::min<int64_t>(c.max_position, 8192);
  KvCacheShape shape;
  shape.num_layers = c.num_layers;
  shape.num_kv_heads = c.num_kv_heads;
  shape.head_dim = c.head_dim;
  shape.block_size = options.kv_block_size;
  shape.num_blocks = BlocksForTokens(g->max_context_, options.kv_block_size);
  shape.type = options.kv_type;
  JISU_ASSIGN_OR_RETURN(g->cache_, KvCache::Create(shape));
  g->block_table_.resize(static_cast<size_t>(shape.num_blocks));
  std::iota(g->block_table_.begin(), g->block_table_.end(), 0);
  return g;
}

Status Generator::Feed(std::span<const int32_t> ids, int64_t start_position,
                       std::span<const int64_t> rows, float* logits) {
  ForwardBatch batch;
  batch.token_ids = ids;
  batch.sequences.push_back(
      BatchSequence{static_cast<int64_t>(ids.size()), start_position, block_table_});
  batch.logits_rows = rows;
  batch.options.matmul = options_.matmul;
  return transformer_.Forward(batch, *cache_, logits);
}

Result<std::vector<float>> Generator::PromptLogits(std::span<const int32_t> prompt_ids,
                                                   std::span<const int64_t> positions) {
  const int64_t n = static_cast<int64_t>(prompt_ids.size());
  if (n == 0) return Status::InvalidArgument("empty prompt");
  if (n > max_context_) {
    return Status::OutOfRange("prompt of " + std::to_string(n) + " tokens exceeds the context of " +
                              std::to_string(max_context_));
  }
  const int64_t vocab = model_.config().vocab_size;
  std::vector<float> out(positions.size() * vocab);
  for (int64_t begin = 0; begin < n; begin += options_.prefill_chunk) {
    const int64_t end = std::min(n, begin + options_.prefill_chunk);
    std::vector<int64_t> rows;
    std::vector<size_t> slots;
    for (size_t i = 0; i < positions.size(); ++i) {
      if (positions[i] < 0 || positions[i] >= n) {
        return Status::InvalidArgument("logit position out of range");
      }
      if (positions[i] >= begin && positions[i] < end) {
        rows.push_back(positions[i] - begin);
        slots.push_back(i);
      }
    }
    std::vector<float> chunk_logits(rows.size() * vocab);
    JISU_RETURN_IF_ERROR(
        Feed(prompt_ids.subspan(begin, end - begin), begin, rows, chunk_logits.data()));
    for (size_t r = 0; r < rows.size(); ++r) {
      std::copy_n(chunk_logits.data() + r * vocab, vocab, out.data() + slots[r] * vocab);
    }
  }
  return out;
}

Result<GenerationResult> Generator::Generate(std::span<const int32_t> prompt_ids,
                                             const SamplingParams& params,
                                             const std::function<bool(std::string_view)>& on_text) {
  JISU_RETURN_IF_ERROR(params.Validate());
  const int64_t n = static_cast<int64_t>(prompt_ids.size());
  if (n == 0) return Status::InvalidArgument("empty prompt");
  if (n >= max_context_) {
    return Status::OutOfRange("prompt of " + std::to_string(n) +
                              " tokens does not fit the context of " +
                              std::to_string(max_context_) + " tokens");
  }
  const int64_t vocab = model_.config().vocab_size;
  logits_.resize(static_cast<size_t>(vocab));
  GenerationResult result;
  result.timings.prompt_tokens = n;

  const double t0 = Now();
  for (int64_t begin = 0; begin < n; begin += options_.prefill_chunk) {
    const int64_t end = std::min(n, begin + options_.prefill_chunk);
    std::vector<int64_t> rows;
    if (end == n) rows.push_back(end - 1 - begin);
    JISU_RETURN_IF_ERROR(Feed(prompt_ids.subspan(begin, end - begin), begin, rows, logits_.data()));
  }
  double t1 = Now();
  result.timings.prompt_seconds = t1 - t0;

  OutputProcessor output(params, /*top_logprobs=*/-1, model_.tokenizer(), model_.eos_ids(),
                         static_cast<int32_t>(vocab));
  auto emit = [&](const EngineOutput& delta) {
    result.output_ids.insert(result.output_ids.end(), delta.token_ids.begin(),
                             delta.token_ids.end());
    result.text += delta.text;
    return delta.text.empty() || !on_text || on_text(delta.text);
  };
  result.finish_reason = FinishReason::kLength;
  int64_t position = n;
  while (params.max_tokens > 0) {
    output.OnToken(logits_.data(), 0, prompt_ids, result.output_ids);
    // A full context ends the request like max_tokens does (the processor checks that one).
    EngineOutput delta;
    const FinishReason reason =
        output.Emit(position >= max_context_ ? FinishReason::kLength : FinishReason::kNone, &delta);
    const bool keep_going = emit(delta);
    if (reason != FinishReason::kNone) {
      result.finish_reason = reason;
      break;
    }
    if (!keep_going) {  // the caller stopped: release the held-back text
      EngineOutput rest;
      output.Emit(FinishReason::kLength, &rest);
      emit(rest);
      break;
    }
    const int64_t row = 0;
    JISU_RETURN_IF_ERROR(Feed(std::span<const int32_t>(&result.output_ids.back(), 1), position,
                              std::span<const int64_t>(&row, 1), logits_.data()));
    ++position;
  }
  const double t2 = Now();
  result.timings.decode_seconds = t2 - t1;
  result.timings.generated_tokens = static_cast<int64_t>(result.output_ids.size());
  return result;
}

}  // namespace jisu
