// The shape and hyper-parameters of a decoder-only transformer. What each architecture does
// with them (its layers' operations) is written once in src/model/arch/ as a ModelProgram;
// these fields are what the files say. Built once from config.json or GGUF metadata, validated
// once, read-only afterwards.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "jisu/status.h"
#include "ops/elementwise.h"

namespace jisu {

class GgufFile;
class GgufWriter;

enum class Architecture { kLlama, kMistral, kQwen2, kQwen3, kGemma3, kSmolLM3 };
const char* ArchitectureName(Architecture arch);

struct RopeScaling {
  enum class Type { kNone, kLinear, kLlama3 };
  Type type = Type::kNone;
  float factor = 1.0f;
  float low_freq_factor = 1.0f;          // llama3
  float high_freq_factor = 4.0f;         // llama3
  int64_t original_max_position = 8192;  // llama3
};

struct ModelConfig {
  Architecture arch = Architecture::kLlama;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t max_position = 0;  // context length the model was trained for
  float rms_norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  // Hugging Face checkpoints rotate pairs (i, i + d/2); GGUF llama files store Q/K rows
  // permuted for interleaved pairs (2i, 2i+1). The loader sets the style of its source.
  RopeStyle rope_style = RopeStyle::kHalfSplit;
  bool tie_word_embeddings = false;
  bool attention_bias = false;            // bias on q/k/v projections (Qwen2)
  std::optional<int64_t> sliding_window;  // Mistral v0.1: attend to the last N positions
  // Which layers use sliding_window (Gemma 3: five of six); empty: every layer does.
  std::vector<uint8_t> sliding_layers;
  // Which layers rotate q and k (SmolLM3: three of four, the fourth has no position encoding);
  // empty: every layer does.
  std::vector<uint8_t> rope_layers;
  bool qk_norm = false;  // RMSNorm of each query and key head before rope (Qwen3, Gemma 3)
  // Gemma: the rope base of the sliding-window layers (the global ones use rope_theta and
  // rope_scaling); 0: the same as rope_theta.
  float rope_local_theta = 0.0f;
  float query_pre_attn_scalar = 0.0f;  // attention scale 1/sqrt(this); 0: head_dim
  float final_logit_softcap = 0.0f;    // 0: none
  // Added to every norm weight at load (Hugging Face Gemma files store w of "x * (1 + w)";
  // GGUF files store 1 + w already).
  float norm_weight_offset = 0.0f;

  // Whether `layer` attends through the sliding window.
  bool LayerSlides(int64_t layer) const {
    if (!sliding_window) return false;
    return sliding_layers.empty() || sliding_layers[static_cast<size_t>(layer)] != 0;
  }

  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }

  // Names the first bad field; guards every later size computation against absurd values.
  Status Validate() const;
  std::string Describe() const;  // one line for `jisu info`
};

// From a Hugging Face config.json (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
// Qwen3ForCausalLM, Gemma3ForCausalLM).
Result<ModelConfig> ModelConfigFromHf(const nlohmann::json& config);
// From GGUF metadata (general.architecture llama / mistral / qwen2 / qwen3 / gemma3).
// vocab_size falls back to the tokenizer's token count.
Result<ModelConfig> ModelConfigFromGguf(const GgufFile& gguf);
// The inverse: writes general.architecture and the <arch>.* hyperparameters that
// ModelConfigFromGguf reads (llama.cpp's key names). Rope frequency factors (llama3 scaling)
// are a tensor, rope_freqs.weight, which the caller writes.
void AddModelConfigToGguf(const ModelConfig& config, GgufWriter& writer);

// Inverse rotary frequencies [head_dim / 2] including rope scaling, computed in float32 as
// transformers does (so positions and angles match it bit for bit where possible). The local
// variant is Gemma's sliding-window layers' (rope_local_theta, no scaling).
std::vector<float> RopeInverseFrequencies(const ModelConfig& config);
std::vector<float> RopeInverseFrequencies(const ModelConfig& config, float theta,
                                          const RopeScaling& scaling);

}  // namespace jisu
