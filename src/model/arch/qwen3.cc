// Qwen3 (dense): Qwen2's layers without the q/k/v bias, with an RMSNorm over each query and
// key head before rope.
#include "format/gguf.h"
#include "model/arch/architectures.h"

namespace jisu {
namespace {

Status ReadQwen3Hf(const nlohmann::json& j, ModelConfig& c) {
  c.qk_norm = true;
  c.attention_bias = HfBool(j, "attention_bias", false);
  if (HfBool(j, "use_sliding_window", false)) {
    return Status::Unsupported("config.json: Qwen3 use_sliding_window is not supported");
  }
  return Status::Ok();
}

Status ReadQwen3Gguf(const GgufFile& gguf, ModelConfig& c) {
  c.qk_norm = true;
  c.attention_bias = gguf.FindTensor("blk.0.attn_q.bias") != nullptr;
  return Status::Ok();
}

void BuildQwen3(const ModelConfig& c, ModelProgram& p) {
  AppendAttentionBlock({.qkv_bias = c.attention_bias, .qk_norm = true}, p);
  AppendMlpBlock({.act = Activation::kSilu}, p);
}

}  // namespace

extern const ArchitectureDef kQwen3Arch = {
    Architecture::kQwen3, "qwen3",       "Qwen3ForCausalLM", "qwen3",
    ReadQwen3Hf,          ReadQwen3Gguf, BuildQwen3,         nullptr};

}  // namespace jisu
