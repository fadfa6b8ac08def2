// Llama 1/2/3, Mistral and Qwen2: pre-norm decoder layers with SwiGLU; Qwen2 adds a bias to
// q/k/v, Mistral v0.1 attends through a sliding window.
#include "format/gguf.h"
#include "model/arch/architectures.h"

namespace jisu {
namespace {

Status ReadNothing(const nlohmann::json&, ModelConfig&) { return Status::Ok(); }

Status ReadMistralHf(const nlohmann::json& j, ModelConfig& c) {
  if (auto it = j.find("sliding_window"); it != j.end() && it->is_number_integer()) {
    c.sliding_window = it->get<int64_t>();
  }
  return Status::Ok();
}

Status ReadQwen2Hf(const nlohmann::json& j, ModelConfig& c) {
  c.attention_bias = true;
  if (HfBool(j, "use_sliding_window", false)) {
    return Status::Unsupported("config.json: Qwen2 use_sliding_window is not supported");
  }
  return Status::Ok();
}

Status ReadLlamaGguf(const GgufFile&, ModelConfig&) { return Status::Ok(); }

Status ReadQwen2Gguf(const GgufFile&, ModelConfig& c) {
  c.attention_bias = true;
  return Status::Ok();
}

void BuildLlama(const ModelConfig& c, ModelProgram& p) {
  AppendAttentionBlock({.qkv_bias = c.attention_bias}, p);
  AppendMlpBlock({.act = Activation::kSilu}, p);
}

}  // namespace

extern const ArchitectureDef kLlamaArch = {Architecture::kLlama,
                                           "llama",
                                           "LlamaForCausalLM",
                                           "llama",
                                           ReadNothing,
                                           ReadLlamaGguf,
                                           BuildLlama,
                                           nullptr,
                                           true};
extern const ArchitectureDef kMistralArch = {Architecture::kMistral,
                                             "mistral",
                                             "MistralForCausalLM",
                                             "mistral",
                                             ReadMistralHf,
                                             ReadLlamaGguf,
                                             BuildLlama,
                                             nullptr,
                                             true};
extern const ArchitectureDef kQwen2Arch = {
    Architecture::kQwen2, "qwen2",       "Qwen2ForCausalLM", "qwen2",
    ReadQwen2Hf,          ReadQwen2Gguf, BuildLlama,         nullptr};

}  // namespace jisu
