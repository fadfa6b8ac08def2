// The architectures jisu runs, one definition each (src/model/arch/<name>.cc): how their
// config.json and GGUF metadata name them, the fields only they read, and their layer program
// (model/layer_program.h). Adding an architecture is a new file here and one line in
// architectures.cc; the loaders and backends are generic over these definitions.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "jisu/status.h"
#include "model/layer_program.h"
#include "model/model_config.h"

namespace jisu {

class GgufFile;

struct ArchitectureDef {
  Architecture arch;
  const char* name;           // GGUF general.architecture, and the name jisu shows
  const char* hf_class;       // config.json "architectures"[0]
  const char* hf_model_type;  // config.json "model_type"
  // Reads the fields only this architecture has, after the common ones (model_config.cc).
  Status (*read_hf)(const nlohmann::json& config, ModelConfig& c);
  Status (*read_gguf)(const GgufFile& gguf, ModelConfig& c);
  // Appends the layer ops (and adjusts scales, rope tables, windows) of a program whose common
  // parts BuildModelProgram has set from the config.
  void (*build)(const ModelConfig& c, ModelProgram& p);
  // Unsupported when the config has settings GGUF readers take from fixed rules instead of
  // the file (so a converted file would run differently); nullptr: every config is expressible.
  Status (*check_gguf_expressible)(const ModelConfig& c);
  // GGUF files of this architecture store Q and K rows permuted for interleaved rotary pairs
  // (llama.cpp's converter does it for llama-shaped families); the rest keep Hugging Face's
  // half-split layout. Read by the GGUF reader and by `jisu convert`.
  bool gguf_permutes_qk = false;
};

std::span<const ArchitectureDef* const> AllArchitectures();
const ArchitectureDef& FindArchitecture(Architecture arch);
// nullptr when unknown; matches hf_class, else hf_model_type.
const ArchitectureDef* FindHfArchitecture(const std::string& hf_class,
                                          const std::string& model_type);
const ArchitectureDef* FindGgufArchitecture(const std::string& name);
std::string SupportedArchitectureNames(bool hf);  // for error messages

// The decoder blocks the families share (arch/blocks.cc), composed by each definition.
struct AttentionBlock {
  bool qkv_bias = false;   // Qwen2
  bool qk_norm = false;    // Qwen3, Gemma 3
  bool post_norm = false;  // Gemma: RMSNorm of the attention output before the residual add
  bool float_qkv = false;  // the q/k/v product's input stays float32 (Op::float_activations)
};
struct MlpBlock {
  Activation act = Activation::kSilu;
  bool post_norm = false;      // Gemma: RMSNorm of the MLP output before the residual add
  bool float_gate_up = false;  // the gate/up product's input stays float32
};
void AppendAttentionBlock(const AttentionBlock& block, ModelProgram& p);
void AppendMlpBlock(const MlpBlock& block, ModelProgram& p);

// config.json helpers for read_hf.
Result<float> HfFloat(const nlohmann::json& j, const char* key, float fallback);
bool HfBool(const nlohmann::json& j, const char* key, bool fallback);

}  // namespace jisu
