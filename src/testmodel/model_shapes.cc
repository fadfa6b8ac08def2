#include "testmodel/model_shapes.h"

namespace jisu {
namespace {

struct Shape {
  const char* name;
  Architecture arch;
  int64_t hidden, layers, heads, kv_heads, ffn, vocab, context;
  float theta, eps;
  bool tied;
  float llama3_factor;  // 0: no rope scaling
};

// From the checkpoints' config.json files.
constexpr Shape kShapes[] = {
    {"tinyllama-1.1b", Architecture::kLlama, 2048, 22, 32, 4, 5632, 32000, 2048, 10000.0f, 1e-5f,
     false, 0.0f},
    {"qwen2.5-0.5b", Architecture::kQwen2, 896, 24, 14, 2, 4864, 151936, 32768, 1e6f, 1e-6f, true,
     0.0f},
    {"llama-3.2-1b", Architecture::kLlama, 2048, 16, 32, 8, 8192, 128256, 131072, 500000.0f, 1e-5f,
     true, 32.0f},
    {"llama-3.1-8b", Architecture::kLlama, 4096, 32, 32, 8, 14336, 128256, 131072, 500000.0f, 1e-5f,
     false, 8.0f},
    {"qwen2.5-7b", Architecture::kQwen2, 3584, 28, 28, 4, 18944, 152064, 32768, 1e6f, 1e-6f, false,
     0.0f},
};

}  // namespace

std::vector<std::string> NamedModelShapeNames() {
  std::vector<std::string> names;
  for (const Shape& s : kShapes) names.emplace_back(s.name);
  return names;
}

Result<ModelConfig> NamedModelShape(const std::string& name) {
  for (const Shape& s : kShapes) {
    if (name != s.name) continue;
    ModelConfig c;
    c.arch = s.arch;
    c.hidden_size = s.hidden;
    c.num_layers = s.layers;
    c.num_heads = s.heads;
    c.num_kv_heads = s.kv_heads;
    c.head_dim = s.hidden / s.heads;
    c.intermediate_size = s.ffn;
    c.vocab_size = s.vocab;
    c.max_position = s.context;
    c.rope_theta = s.theta;
    c.rms_norm_eps = s.eps;
    c.tie_word_embeddings = s.tied;
    c.attention_bias = s.arch == Architecture::kQwen2;
    if (s.llama3_factor > 0) {
      c.rope_scaling.type = RopeScaling::Type::kLlama3;
      c.rope_scaling.factor = s.llama3_factor;
      c.rope_scaling.low_freq_factor = 1.0f;
      c.rope_scaling.high_freq_factor = 4.0f;
      c.rope_scaling.original_max_position = 8192;
    }
    JISU_RETURN_IF_ERROR(c.Validate());
    return c;
  }
  std::string known;
  for (const Shape& s : kShapes) known += (known.empty() ? "" : ", ") + std::string(s.name);
  return Status::InvalidArgument("unknown model shape '" + name + "' (known: " + known + ")");
}

}  // namespace jisu
