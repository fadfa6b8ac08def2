// jisu as a library: load a model, submit requests, read their outputs as they are produced.
// This header, sampling_params.h, request_options.h and status.h are the whole public surface (no
// CUDA or third-party headers); the CLI and the server are built on the same engine.
//
//   auto llm = jisu::Llm::Open({.model = "model.gguf"});
//   auto stream = (*llm)->Submit({.prompt = "Once upon a time", .sampling = {.max_tokens = 32}});
//   while (auto chunk = (*stream)->Next()) std::cout << chunk->text;
//
// Structured output (JSON Schema, JSON object, GBNF, regex) is a field of the request's
// sampling parameters, SamplingParams::structured; Submit refuses one that does not compile.
//
// Thread-safe: any thread may Submit, Cancel or read a stream. Requests share one continuous
// batch (paged KV, prefix caching, preemption) on the chosen device.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jisu/finish_reason.h"
#include "jisu/request_options.h"
#include "jisu/sampling_params.h"
#include "jisu/status.h"

namespace jisu {

struct LlmOptions {
  std::string model;              // GGUF file or Hugging Face folder; empty: the default model
  std::string device = "auto";    // "auto", "cpu", "cuda", "cuda:N"
  int num_threads = 0;            // CPU threads; 0: all
  std::string kv_memory = "0.5";  // KV pool: a fraction of free memory ("0.5") or a size ("2GiB")
  int64_t max_model_len = 0;      // tokens per request (prompt + output); 0: min(model's, 8192)
  int64_t max_seqs = 256;         // requests batched together
  std::string prefix_cache = "shared";  // "off", "shared" (system prompts), "full"
  // Jinja source (the text, not a path) that renders `messages`, used instead of the model's
  // own chat template; empty: the model's. For files without one, e.g. many GGUF conversions.
  std::string chat_template;
  // What requests leave at auto (the CPU weights are laid out for defaults.matmul). Open checks
  // them against the device: a matmul path other than auto only on the CPU.
  RequestOptions defaults;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// One request. Exactly one of prompt, prompt_ids, messages is given.
struct LlmRequest {
  std::string prompt;                 // text, tokenized with the model's special tokens (BOS)
  std::vector<int32_t> prompt_ids;    // or token ids as they are
  std::vector<ChatMessage> messages;  // or a chat, rendered by the chat template
  SamplingParams sampling;
  std::string user;        // tenant for prefix-cache isolation and accounting; empty: shared
  RequestOptions options;  // optimization options (request_options.h); auto: LlmOptions::defaults
};

// What a request produced since its previous chunk.
struct LlmChunk {
  std::string text;                                  // new text (never a split UTF-8 character)
  std::vector<int32_t> token_ids;                    // new tokens
  FinishReason finish_reason = FinishReason::kNone;  // set on the last chunk
  Status error;                                      // with kError
  int64_t num_prompt_tokens = 0;
  int64_t num_cached_prompt_tokens = 0;  // served from the prefix cache
};

// The outputs of one request, in order. Destroying it cancels the request if still running.
class LlmStream {
 public:
  virtual ~LlmStream() = default;
  // Blocks until the next chunk; nullopt once the last chunk (the one with a finish reason)
  // has been returned.
  virtual std::optional<LlmChunk> Next() = 0;
  virtual void Cancel() = 0;
};

class Llm {
 public:
  // Loads the model and starts the engine. Errors name the file, flag or field at fault.
  static Result<std::unique_ptr<Llm>> Open(const LlmOptions& options);
  virtual ~Llm() = default;

  // Validates and queues the request (InvalidArgument, also for options this engine cannot run,
  // OutOfRange for a prompt longer than max_model_len, ResourceExhausted when the queue is full,
  // Unavailable while shutting down).
  virtual Result<std::unique_ptr<LlmStream>> Submit(const LlmRequest& request) = 0;

  // Convenience: submits and reads the whole output. The last chunk's fields, with all text
  // and tokens.
  Result<LlmChunk> Generate(const LlmRequest& request);

  virtual std::vector<int32_t> Tokenize(std::string_view text, bool add_special) const = 0;
  virtual std::string Detokenize(const std::vector<int32_t>& ids) const = 0;
  // "cpu (avx512, 2 threads)", "cuda:0 (NVIDIA H100 80GB HBM3)".
  virtual std::string device() const = 0;
  virtual std::string model_description() const = 0;
};

}  // namespace jisu
