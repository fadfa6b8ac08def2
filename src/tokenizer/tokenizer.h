// Text <-> token ids for BPE tokenizers:
//   - byte-level BPE (GPT-2, Llama-3, Qwen2, SmolLM, Falcon, MPT, StarCoder, Refact,
//     Command-R, DeepSeek) with the model's normalizer and pre-tokenizer;
//   - SentencePiece-style BPE with byte fallback (Llama-2, Mistral, Phi-3, Gemma), merges by
//     score or rank.
// Loaded from a Hugging Face tokenizer.json (+ tokenizer_config.json) or from GGUF metadata.
// Added/special tokens written in the text are recognized as single tokens, as transformers
// does. Special tokens (BOS/EOS) are added only as the model's configuration says.
//
// Reference behavior is transformers 5.x (AutoTokenizer), which differs from 4.x in two ways
// that matter here (see hf_loader.cc): LlamaTokenizer / Qwen2Tokenizer / GPT2Tokenizer rebuild
// their pipeline from the class instead of tokenizer.json, and add_bos_token / add_eos_token
// in tokenizer_config.json are ignored when a tokenizer.json exists (its post-processor
// decides). With an empty config the tokenizer.json pipeline is used as written (`tokenizers`).
// FromGguf gives a GGUF vocabulary the pipeline of its family's tokenizer.json, named by
// tokenizer.ggml.pre (gguf_loader.cc, gguf_families.cc).
// Input text that is not valid UTF-8 is encoded as if each invalid sequence were U+FFFD.
// Decode follows tokenizers' replacement rules for invalid UTF-8 in the output; StreamDecoder
// follows Python's errors="replace"; both agree whenever the output is valid UTF-8.
// Thread safety: a loaded Tokenizer's const methods may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jisu/status.h"

namespace jisu {

// The tokenizer part of a GGUF file's metadata (tokenizer.ggml.*), extracted by the caller.
struct GgufTokenizerData {
  std::string model;  // tokenizer.ggml.model: "gpt2" (byte-level), "llama"/"gemma4" (SentencePiece)
  std::string pre;    // tokenizer.ggml.pre: "llama-bpe", "qwen2", "falcon", ... (may be empty)
  std::vector<std::string> tokens;
  std::vector<float> scores;  // may be empty
  std::vector<int32_t>
      token_types;  // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
  std::vector<std::string> merges;  // "a b" pairs, BPE models
  std::optional<int32_t> bos_id, eos_id, unk_id, pad_id, eot_id;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
};

class Tokenizer {
 public:
  // tokenizer_config_json may be empty (then defaults of tokenizer.json apply).
  static Result<std::unique_ptr<Tokenizer>> FromHuggingFace(std::string_view tokenizer_json,
                                                            std::string_view tokenizer_config_json);
  static Result<std::unique_ptr<Tokenizer>> FromGguf(const GgufTokenizerData& data);
  virtual ~Tokenizer() = default;

  // add_special: add BOS/EOS etc. as the model's configuration says (transformers'
  // add_special_tokens=True). Special tokens in the text are always parsed as such.
  virtual std::vector<int32_t> Encode(std::string_view text, bool add_special) const = 0;

  // Concatenated text of the ids. skip_special drops control tokens (BOS/EOS/...).
  virtual std::string Decode(std::span<const int32_t> ids, bool skip_special) const = 0;

  // The raw bytes a token stands for (after byte-level/byte-fallback decoding); may be a
  // partial UTF-8 sequence. For a special token, its text.
  virtual std::string TokenBytes(int32_t id) const = 0;

  // The bytes `id` adds to Decode's output when it is the first decoded token (first == true)
  // or a later one: TokenBytes plus the decoder's first-token rules (SentencePiece drops the
  // leading space of the first piece). StreamDecoder is built on it.
  virtual std::string DecodePiece(int32_t id, bool first) const { return TokenBytes(id); }

  virtual int32_t vocab_size() const = 0;
  virtual std::optional<int32_t> TokenToId(std::string_view token) const = 0;  // exact vocab entry
  virtual std::string IdToToken(int32_t id) const = 0;  // vocab entry as stored
  virtual bool IsSpecial(int32_t id) const = 0;         // control / added special token

  virtual std::optional<int32_t> bos_id() const = 0;
  virtual std::optional<int32_t> eos_id() const = 0;
  // Ids that end generation. Rule: eos_id(), plus every special (control) token whose text is
  // one of the common end-of-turn markers (<|eot_id|>, <|eom_id|>, <|end_of_text|>,
  // <|im_end|>, <|endoftext|>, <|end|>, <end_of_turn>, </s>), plus GGUF's eot_token_id.
  // generation_config.json's eos list, if the caller has it, can be passed to AddStopIds.
  virtual std::vector<int32_t> stop_ids() const = 0;
  virtual void AddStopIds(std::span<const int32_t> ids) {}
};

// Turns a stream of token ids into text deltas that never split a UTF-8 character: bytes of
// an incomplete sequence are held until the next token completes it. Invalid sequences are
// replaced by U+FFFD (as Python's errors="replace") once it is clear they cannot complete.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = true);
  std::string Push(int32_t id);
  std::string Flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::string pending_;
  std::vector<int32_t> ids_;  // SentencePiece needs context for the leading-space rule
};

}  // namespace jisu
