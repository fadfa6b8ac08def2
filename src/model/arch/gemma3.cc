// Gemma 3 (text): embeddings scaled by sqrt(hidden); four RMSNorms a layer (before and after
// attention and MLP); RMSNorm of each query and key head; GELU (tanh approximation) gated MLP;
// five sliding-window layers (local rope base) to one global layer (rope_theta and scaling);
// attention scaled by 1/sqrt(query_pre_attn_scalar).
#include <cmath>

#include "format/gguf.h"
#include "model/arch/architectures.h"

namespace jisu {
namespace {

// Gemma 3 interleaves five local layers with one global one; llama.cpp hard-codes the same.
constexpr int64_t kSlidingPattern = 6;
constexpr float kLocalRopeTheta = 10000.0f;

void SetPattern(ModelConfig& c, int64_t pattern) {
  c.sliding_layers.assign(static_cast<size_t>(c.num_layers), 1);
  if (pattern <= 0) return;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    if ((l + 1) % pattern == 0) c.sliding_layers[static_cast<size_t>(l)] = 0;
  }
}

Status ReadGemma3Hf(const nlohmann::json& j, ModelConfig& c) {
  c.qk_norm = true;
  c.norm_weight_offset = 1.0f;  // Gemma3RMSNorm: x * (1 + w)
  c.tie_word_embeddings = HfBool(j, "tie_word_embeddings", true);
  c.attention_bias = HfBool(j, "attention_bias", false);
  if (auto it = j.find("hidden_activation");
      it != j.end() && it->is_string() && it->get<std::string>() != "gelu_pytorch_tanh") {
    return Status::Unsupported("config.json: Gemma 3 hidden_activation '" + it->get<std::string>() +
                               "' is not supported");
  }
  if (auto it = j.find("attn_logit_softcapping"); it != j.end() && !it->is_null()) {
    return Status::Unsupported("config.json: attn_logit_softcapping is not supported");
  }
  JISU_ASSIGN_OR_RETURN(c.final_logit_softcap, HfFloat(j, "final_logit_softcapping", 0.0f));
  JISU_ASSIGN_OR_RETURN(c.query_pre_attn_scalar,
                        HfFloat(j, "query_pre_attn_scalar", static_cast<float>(c.head_dim)));
  JISU_ASSIGN_OR_RETURN(c.rope_local_theta, HfFloat(j, "rope_local_base_freq", kLocalRopeTheta));
  // transformers >= 5 nests the rope settings per layer type.
  if (auto rp = j.find("rope_parameters"); rp != j.end() && rp->is_object()) {
    if (auto s = rp->find("sliding_attention"); s != rp->end() && s->is_object()) {
      JISU_ASSIGN_OR_RETURN(c.rope_local_theta, HfFloat(*s, "rope_theta", c.rope_local_theta));
    }
    if (auto f = rp->find("full_attention"); f != rp->end() && f->is_object()) {
      JISU_ASSIGN_OR_RETURN(c.rope_theta, HfFloat(*f, "rope_theta", c.rope_theta));
      const std::string type = f->value("rope_type", std::string("default"));
      if (type == "linear") {
        c.rope_scaling.type = RopeScaling::Type::kLinear;
        JISU_ASSIGN_OR_RETURN(c.rope_scaling.factor, HfFloat(*f, "factor", 1.0f));
      } else if (type != "default") {
        return Status::Unsupported("config.json: Gemma 3 rope type '" + type +
                                   "' is not supported");
      }
    }
  }
  if (auto it = j.find("sliding_window"); it != j.end() && it->is_number_integer()) {
    c.sliding_window = it->get<int64_t>();
  }
  if (auto it = j.find("layer_types"); it != j.end() && it->is_array()) {
    if (static_cast<int64_t>(it->size()) != c.num_layers) {
      return Status::InvalidArgument("config.json: layer_types needs one entry per layer");
    }
    c.sliding_layers.clear();
    for (const auto& t : *it) {
      if (!t.is_string()) return Status::InvalidArgument("config.json: bad layer_types entry");
      const std::string type = t.get<std::string>();
      if (type != "sliding_attention" && type != "full_attention") {
        return Status::Unsupported("config.json: layer type '" + type + "' is not supported");
      }
      c.sliding_layers.push_back(type == "sliding_attention");
    }
  } else {
    int64_t pattern = kSlidingPattern;
    if (auto it = j.find("sliding_window_pattern"); it != j.end() && it->is_number_integer()) {
      pattern = it->get<int64_t>();
    }
    SetPattern(c, pattern);
  }
  return Status::Ok();
}

Status ReadGemma3Gguf(const GgufFile&, ModelConfig& c) {
  c.qk_norm = true;
  c.rope_local_theta = kLocalRopeTheta;
  c.query_pre_attn_scalar = static_cast<float>(c.head_dim);
  SetPattern(c, kSlidingPattern);
  return Status::Ok();
}

// GGUF readers (llama.cpp, and ReadGemma3Gguf) take these from fixed rules, not the file.
Status CheckGemma3Gguf(const ModelConfig& c) {
  ModelConfig rules = c;
  SetPattern(rules, kSlidingPattern);
  if (rules.sliding_layers != c.sliding_layers || c.final_logit_softcap != 0 ||
      c.query_pre_attn_scalar != static_cast<float>(c.head_dim) ||
      c.rope_local_theta != kLocalRopeTheta) {
    return Status::Unsupported(
        "this Gemma 3 config (layer pattern, query_pre_attn_scalar, local rope base or logit "
        "softcap) cannot be expressed in GGUF metadata");
  }
  return Status::Ok();
}

void BuildGemma3(const ModelConfig& c, ModelProgram& p) {
  p.embed_scale = std::sqrt(static_cast<float>(c.hidden_size));
  const float qpas =
      c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : static_cast<float>(c.head_dim);
  p.attn_scale = 1.0f / std::sqrt(qpas);
  // Table 1: the sliding layers' rope (local base, no scaling).
  p.ropes.push_back(RopeTable{RopeInverseFrequencies(
      c, c.rope_local_theta > 0 ? c.rope_local_theta : c.rope_theta, RopeScaling{})});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    if (c.LayerSlides(l)) p.layers[static_cast<size_t>(l)].rope = 1;
  }
  // The products fed by Gemma's norms lose accuracy with int8 activations (the real 270M file,
  // bench/results/2026-12-06-gemma3-270m-cpu.md: teacher-forced top-1 against transformers
  // 96.1% with them, 97.7% with these two float); the others stay on the fast path.
  AppendAttentionBlock(
      {.qkv_bias = c.attention_bias, .qk_norm = true, .post_norm = true, .float_qkv = true}, p);
  AppendMlpBlock({.act = Activation::kGeluTanh, .post_norm = true, .float_gate_up = true}, p);
}

}  // namespace

extern const ArchitectureDef kGemma3Arch = {
    Architecture::kGemma3, "gemma3",       "Gemma3ForCausalLM", "gemma3_text",
    ReadGemma3Hf,          ReadGemma3Gguf, BuildGemma3,         CheckGemma3Gguf};

}  // namespace jisu
