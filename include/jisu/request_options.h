// The optimization options of one request (public: include/jisu). Each has "auto", which takes
// the engine's default (EngineOptions::defaults, LlmOptions::defaults, the CLI's flags); a
// default of "auto" leaves the choice to the engine's measured policy.
//
// Who may share what: a forward step runs one weight set and one matmul path for all of its
// rows (StepOptionsOf), so the scheduler batches together only requests that agree on them;
// sampling placement and the speculative window are per row. Options that change the K/V a
// request writes (weight set, matmul path, attention variant) are part of the prefix-cache key
// (KvCacheKeyOf): a request never reuses K/V computed under other numerics.
//
// Validate() checks what needs no engine (ranges); Engine::CheckOptions checks the rest against
// the engine that will run the request (its weight sets, backend, drafter). Both run once, at
// the edge (HTTP, the Llm API); the engine trusts the options it is given.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "jisu/status.h"

namespace jisu {

// The CPU's matmul numerics. kFloat: float activations against dequantized weights (what
// transformers computes). kInt8: activations quantized to int8 blocks for every product (and
// bf16 numerics for F16/BF16 weights). kAuto (as a default): the measured per-shape choice, int8
// for steps of many tokens and the GEMV, float for some decode kernels. The CUDA backend has one
// path (BF16) and refuses any other choice rather than compute something else.
enum class MatmulPath : uint8_t { kAuto, kFloat, kInt8 };

// Where a row's token is drawn. kDevice: on the backend's device where it can draw (CUDA) and
// the row needs no host logits (no logprobs, no penalties), on the host otherwise: a
// preference, never an error. kHost: the logits always come to the host.
enum class SamplingPlacement : uint8_t { kAuto, kDevice, kHost };

// Attention over the prompt and the cache. kDense is the only variant today. Sparse prefill
// (issue 35) becomes kSparse with a threshold here; it is per row (the attention op loops per
// sequence) and, as it changes the K/V of later layers, already part of KvCacheKeyOf.
enum class AttentionVariant : uint8_t { kAuto, kDense };

struct RequestOptions {
  MatmulPath matmul = MatmulPath::kAuto;
  SamplingPlacement sampling = SamplingPlacement::kAuto;
  AttentionVariant attention = AttentionVariant::kAuto;
  // The weight set to run on, by name: "" is the weights the model was loaded with, the only
  // set today (quantized sets made at load, issue 33, get names here).
  std::string weights;
  // Speculative decoding: nullopt = the engine's choice; 0 = off; k = up to k drafts a step.
  // k > 0 needs an engine with a drafter and a greedy request (temperature 0).
  std::optional<int32_t> speculative;

  static constexpr int32_t kMaxSpeculative = 64;

  // Ranges only (no engine needed). Errors here and from Engine::CheckOptions start with the
  // field's name ("speculative must be ...").
  Status Validate() const;

  // This request's options with every field left at auto taken from `defaults`.
  RequestOptions Over(const RequestOptions& defaults) const;

  bool operator==(const RequestOptions&) const = default;
};

// What every row of one forward step must share: the scheduler's step key, handed to the
// backend with the step (ForwardBatch::options).
struct StepOptions {
  std::string weights;
  MatmulPath matmul = MatmulPath::kAuto;
  bool operator==(const StepOptions&) const = default;
};
StepOptions StepOptionsOf(const RequestOptions& resolved);

// The part of the prefix-cache key that comes from the options (of a resolved request: equal
// keys mean equal K/V for equal tokens).
std::string KvCacheKeyOf(const RequestOptions& resolved);

// Names as the HTTP body and the CLI flags spell them ("auto", "float", "int8"; "auto",
// "device", "host"; "auto", "dense"), and their parsers (InvalidArgument listing the names).
const char* MatmulPathName(MatmulPath path);
const char* SamplingPlacementName(SamplingPlacement placement);
const char* AttentionVariantName(AttentionVariant variant);
Result<MatmulPath> ParseMatmulPath(std::string_view name);
Result<SamplingPlacement> ParseSamplingPlacement(std::string_view name);
Result<AttentionVariant> ParseAttentionVariant(std::string_view name);

}  // namespace jisu
