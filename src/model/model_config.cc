#include "model/model_config.h"

#include <cmath>
#include <sstream>

#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "model/arch/architectures.h"

namespace jisu {
namespace {

using nlohmann::json;

// Limits far above any real model, low enough that products of them cannot overflow int64
// and that a corrupt file cannot ask for absurd memory.
constexpr int64_t kMaxDim = 1 << 20;
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxVocab = 1 << 22;
constexpr int64_t kMaxPosition = 1 << 24;

Result<int64_t> GetInt(const json& j, const char* key, std::optional<int64_t> fallback = {}) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    return Status::InvalidArgument(std::string("config.json: missing '") + key + "'");
  }
  if (!it->is_number_integer()) {
    return Status::InvalidArgument(std::string("config.json: '") + key + "' must be an integer");
  }
  return it->get<int64_t>();
}

Result<float> GetFloat(const json& j, const char* key, float fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) {
    return Status::InvalidArgument(std::string("config.json: '") + key + "' must be a number");
  }
  return it->get<float>();
}

bool GetBool(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return fallback;
  return it->get<bool>();
}

Status ParseHfRopeScaling(const json& params, ModelConfig& c) {
  if (!params.is_object()) return Status::Ok();
  std::string type;
  if (auto it = params.find("rope_type"); it != params.end() && it->is_string()) {
    type = it->get<std::string>();
  } else if (auto it2 = params.find("type"); it2 != params.end() && it2->is_string()) {
    type = it2->get<std::string>();
  }
  if (type.empty() || type == "default") return Status::Ok();
  JISU_ASSIGN_OR_RETURN(c.rope_scaling.factor, GetFloat(params, "factor", 1.0f));
  if (type == "linear") {
    c.rope_scaling.type = RopeScaling::Type::kLinear;
  } else if (type == "llama3") {
    c.rope_scaling.type = RopeScaling::Type::kLlama3;
    JISU_ASSIGN_OR_RETURN(c.rope_scaling.low_freq_factor, GetFloat(params, "low_freq_factor", 1));
    JISU_ASSIGN_OR_RETURN(c.rope_scaling.high_freq_factor, GetFloat(params, "high_freq_factor", 4));
    JISU_ASSIGN_OR_RETURN(c.rope_scaling.original_max_position,
                          GetInt(params, "original_max_position_embeddings", 8192));
  } else {
    return Status::Unsupported("config.json: rope scaling type '" + type + "' is not supported");
  }
  return Status::Ok();
}

}  // namespace

const char* ArchitectureName(Architecture arch) { return FindArchitecture(arch).name; }

Status ModelConfig::Validate() const {
  auto in_range = [](int64_t v, int64_t lo, int64_t hi, const char* name) -> Status {
    if (v < lo || v > hi) {
      return Status::InvalidArgument(std::string("model config: ") + name + " = " +
                                     std::to_string(v) + " is out of range [" + std::to_string(lo) +
                                     ", " + std::to_string(hi) + "]");
    }
    return Status::Ok();
  };
  JISU_RETURN_IF_ERROR(in_range(vocab_size, 1, kMaxVocab, "vocab_size"));
  JISU_RETURN_IF_ERROR(in_range(hidden_size, 1, kMaxDim, "hidden_size"));
  JISU_RETURN_IF_ERROR(in_range(num_layers, 1, kMaxLayers, "num_hidden_layers"));
  JISU_RETURN_IF_ERROR(in_range(num_heads, 1, 4096, "num_attention_heads"));
  JISU_RETURN_IF_ERROR(in_range(num_kv_heads, 1, num_heads, "num_key_value_heads"));
  JISU_RETURN_IF_ERROR(in_range(head_dim, 2, 1024, "head_dim"));
  JISU_RETURN_IF_ERROR(in_range(intermediate_size, 1, kMaxDim, "intermediate_size"));
  JISU_RETURN_IF_ERROR(in_range(max_position, 1, kMaxPosition, "max_position_embeddings"));
  if (num_heads % num_kv_heads != 0) {
    return Status::InvalidArgument(
        "model config: num_attention_heads (" + std::to_string(num_heads) +
        ") is not a multiple of num_key_value_heads (" + std::to_string(num_kv_heads) + ")");
  }
  if (head_dim % 2 != 0) return Status::InvalidArgument("model config: head_dim must be even");
  if (!(rms_norm_eps > 0.0f) || !std::isfinite(rms_norm_eps)) {
    return Status::InvalidArgument("model config: rms_norm_eps must be positive");
  }
  if (!(rope_theta > 0.0f) || !std::isfinite(rope_theta)) {
    return Status::InvalidArgument("model config: rope_theta must be positive");
  }
  if (rope_scaling.type != RopeScaling::Type::kNone &&
      (!(rope_scaling.factor > 0.0f) || !std::isfinite(rope_scaling.factor))) {
    return Status::InvalidArgument("model config: rope scaling factor must be positive");
  }
  if (rope_scaling.type == RopeScaling::Type::kLlama3 &&
      (!(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor) ||
       rope_scaling.original_max_position <= 0)) {
    return Status::InvalidArgument("model config: bad llama3 rope scaling parameters");
  }
  if (sliding_window && *sliding_window <= 0) {
    return Status::InvalidArgument("model config: sliding_window must be positive");
  }
  if (!sliding_layers.empty() && static_cast<int64_t>(sliding_layers.size()) != num_layers) {
    return Status::InvalidArgument("model config: one sliding-layer flag per layer expected");
  }
  if (!rope_layers.empty() && static_cast<int64_t>(rope_layers.size()) != num_layers) {
    return Status::InvalidArgument("model config: one rope-layer flag per layer expected");
  }
  if (!(rope_local_theta >= 0.0f) || !std::isfinite(rope_local_theta) ||
      !(query_pre_attn_scalar >= 0.0f) || !std::isfinite(query_pre_attn_scalar) ||
      !(final_logit_softcap >= 0.0f) || !std::isfinite(final_logit_softcap) ||
      !std::isfinite(norm_weight_offset)) {
    return Status::InvalidArgument(
        "model config: rope_local_base_freq, query_pre_attn_scalar and final_logit_softcapping "
        "must be finite and >= 0");
  }
  return Status::Ok();
}

std::string ModelConfig::Describe() const {
  std::ostringstream os;
  os << ArchitectureName(arch) << ": vocab " << vocab_size << ", hidden " << hidden_size << ", "
     << num_layers << " layers, " << num_heads << " heads (" << num_kv_heads << " kv, dim "
     << head_dim << "), ffn " << intermediate_size << ", ctx " << max_position << ", rope theta "
     << rope_theta;
  if (rope_scaling.type == RopeScaling::Type::kLlama3)
    os << " (llama3 x" << rope_scaling.factor << ")";
  if (rope_scaling.type == RopeScaling::Type::kLinear)
    os << " (linear x" << rope_scaling.factor << ")";
  if (tie_word_embeddings) os << ", tied embeddings";
  if (attention_bias) os << ", qkv bias";
  if (sliding_window) {
    os << ", sliding window " << *sliding_window;
    if (!sliding_layers.empty()) {
      int64_t n = 0;
      for (uint8_t f : sliding_layers) n += f;
      os << " (" << n << " of " << num_layers << " layers)";
    }
  }
  if (!rope_layers.empty()) {
    int64_t n = 0;
    for (uint8_t f : rope_layers) n += f == 0;
    os << ", " << n << " layers without rope";
  }
  if (qk_norm) os << ", qk norm";
  if (final_logit_softcap > 0) os << ", logit softcap " << final_logit_softcap;
  return os.str();
}

Result<ModelConfig> ModelConfigFromHf(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("config.json: not a JSON object");
  ModelConfig c;
  std::string arch_name;
  if (auto it = j.find("architectures");
      it != j.end() && it->is_array() && !it->empty() && (*it)[0].is_string()) {
    arch_name = (*it)[0].get<std::string>();
  }
  std::string model_type;
  if (auto it = j.find("model_type"); it != j.end() && it->is_string()) {
    model_type = it->get<std::string>();
  }
  const ArchitectureDef* def = FindHfArchitecture(arch_name, model_type);
  if (def == nullptr) {
    return Status::Unsupported("config.json: unknown architecture '" +
                               (arch_name.empty() ? model_type : arch_name) +
                               "' (supported: " + SupportedArchitectureNames(true) + ")");
  }
  c.arch = def->arch;
  JISU_ASSIGN_OR_RETURN(c.vocab_size, GetInt(j, "vocab_size"));
  JISU_ASSIGN_OR_RETURN(c.hidden_size, GetInt(j, "hidden_size"));
  JISU_ASSIGN_OR_RETURN(c.num_layers, GetInt(j, "num_hidden_layers"));
  JISU_ASSIGN_OR_RETURN(c.num_heads, GetInt(j, "num_attention_heads"));
  JISU_ASSIGN_OR_RETURN(c.num_kv_heads, GetInt(j, "num_key_value_heads", c.num_heads));
  if (c.num_heads <= 0) return Status::InvalidArgument("config.json: num_attention_heads <= 0");
  JISU_ASSIGN_OR_RETURN(c.head_dim, GetInt(j, "head_dim", c.hidden_size / c.num_heads));
  JISU_ASSIGN_OR_RETURN(c.intermediate_size, GetInt(j, "intermediate_size"));
  JISU_ASSIGN_OR_RETURN(c.max_position, GetInt(j, "max_position_embeddings", 4096));
  JISU_ASSIGN_OR_RETURN(c.rms_norm_eps, GetFloat(j, "rms_norm_eps", 1e-6f));
  // transformers >= 5 nests rope settings in rope_parameters; older files use top-level
  // rope_theta and rope_scaling.
  const json* rope_params = nullptr;
  if (auto it = j.find("rope_parameters"); it != j.end() && it->is_object()) rope_params = &*it;
  JISU_ASSIGN_OR_RETURN(c.rope_theta, GetFloat(j, "rope_theta", 10000.0f));
  if (rope_params) {
    JISU_ASSIGN_OR_RETURN(c.rope_theta, GetFloat(*rope_params, "rope_theta", c.rope_theta));
    JISU_RETURN_IF_ERROR(ParseHfRopeScaling(*rope_params, c));
  }
  if (auto it = j.find("rope_scaling"); it != j.end() && it->is_object()) {
    JISU_RETURN_IF_ERROR(ParseHfRopeScaling(*it, c));
  }
  c.tie_word_embeddings = GetBool(j, "tie_word_embeddings", false);
  c.attention_bias = GetBool(j, "attention_bias", false);
  if (GetBool(j, "mlp_bias", false))
    return Status::Unsupported("config.json: mlp_bias is not supported");
  JISU_RETURN_IF_ERROR(def->read_hf(j, c));
  c.rope_style = RopeStyle::kHalfSplit;
  JISU_RETURN_IF_ERROR(c.Validate());
  return c;
}

Result<ModelConfig> ModelConfigFromGguf(const GgufFile& gguf) {
  JISU_ASSIGN_OR_RETURN(std::string arch, gguf.GetString("general.architecture"));
  ModelConfig c;
  const ArchitectureDef* def = FindGgufArchitecture(arch);
  if (def == nullptr) {
    return Status::Unsupported("GGUF: unknown architecture '" + arch +
                               "' (supported: " + SupportedArchitectureNames(false) + ")");
  }
  c.arch = def->arch;
  auto key = [&](const char* suffix) { return arch + "." + suffix; };
  auto get_int = [&](const std::string& k) -> Result<int64_t> {
    auto r = gguf.GetInt(k);
    if (!r.ok()) return r.status().WithContext("GGUF metadata");
    return r;
  };
  JISU_ASSIGN_OR_RETURN(c.hidden_size, get_int(key("embedding_length")));
  JISU_ASSIGN_OR_RETURN(c.num_layers, get_int(key("block_count")));
  JISU_ASSIGN_OR_RETURN(c.num_heads, get_int(key("attention.head_count")));
  JISU_ASSIGN_OR_RETURN(c.intermediate_size, get_int(key("feed_forward_length")));
  JISU_ASSIGN_OR_RETURN(c.max_position, get_int(key("context_length")));
  c.num_kv_heads = c.num_heads;
  if (gguf.Find(key("attention.head_count_kv"))) {
    JISU_ASSIGN_OR_RETURN(c.num_kv_heads, get_int(key("attention.head_count_kv")));
  }
  if (c.num_heads <= 0) return Status::InvalidArgument("GGUF: attention.head_count <= 0");
  c.head_dim = c.hidden_size / c.num_heads;
  if (gguf.Find(key("attention.key_length"))) {
    JISU_ASSIGN_OR_RETURN(c.head_dim, get_int(key("attention.key_length")));
  }
  if (gguf.Find(key("rope.dimension_count"))) {
    JISU_ASSIGN_OR_RETURN(int64_t rope_dim, get_int(key("rope.dimension_count")));
    if (rope_dim != c.head_dim) {
      return Status::Unsupported("GGUF: partial rotary embedding (rope.dimension_count " +
                                 std::to_string(rope_dim) + " != head dim " +
                                 std::to_string(c.head_dim) + ") is not supported");
    }
  }
  if (gguf.Find(key("attention.layer_norm_rms_epsilon"))) {
    JISU_ASSIGN_OR_RETURN(double eps, gguf.GetFloat(key("attention.layer_norm_rms_epsilon")));
    c.rms_norm_eps = static_cast<float>(eps);
  }
  if (gguf.Find(key("rope.freq_base"))) {
    JISU_ASSIGN_OR_RETURN(double base, gguf.GetFloat(key("rope.freq_base")));
    c.rope_theta = static_cast<float>(base);
  }
  if (gguf.Find(key("rope.scaling.type"))) {
    JISU_ASSIGN_OR_RETURN(std::string type, gguf.GetString(key("rope.scaling.type")));
    if (type == "linear") {
      c.rope_scaling.type = RopeScaling::Type::kLinear;
      JISU_ASSIGN_OR_RETURN(double f, gguf.GetFloat(key("rope.scaling.factor")));
      c.rope_scaling.factor = static_cast<float>(f);
    } else if (type != "none") {
      return Status::Unsupported("GGUF: rope scaling type '" + type + "' is not supported");
    }
  }
  if (gguf.Find(key("attention.sliding_window"))) {
    JISU_ASSIGN_OR_RETURN(int64_t w, get_int(key("attention.sliding_window")));
    if (w > 0) c.sliding_window = w;
  }
  if (gguf.Find(key("vocab_size"))) {
    JISU_ASSIGN_OR_RETURN(c.vocab_size, get_int(key("vocab_size")));
  } else if (const GgufValue* tokens = gguf.Find("tokenizer.ggml.tokens")) {
    c.vocab_size = static_cast<int64_t>(tokens->array.size());
  }
  c.tie_word_embeddings = gguf.FindTensor("output.weight") == nullptr;
  c.rope_style = def->gguf_permutes_qk ? RopeStyle::kInterleaved : RopeStyle::kHalfSplit;
  JISU_RETURN_IF_ERROR(def->read_gguf(gguf, c));
  JISU_RETURN_IF_ERROR(c.Validate());
  return c;
}

std::vector<float> RopeInverseFrequencies(const ModelConfig& c) {
  return RopeInverseFrequencies(c, c.rope_theta, c.rope_scaling);
}

std::vector<float> RopeInverseFrequencies(const ModelConfig& c, float theta, const RopeScaling& s) {
  const int64_t half = c.head_dim / 2;
  std::vector<float> inv(half);
  const float dim = static_cast<float>(c.head_dim);
  for (int64_t i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / dim;
    inv[i] = 1.0f / std::pow(theta, exponent);
  }
  if (s.type == RopeScaling::Type::kLinear) {
    for (float& f : inv) f /= s.factor;
  } else if (s.type == RopeScaling::Type::kLlama3) {
    const float old_len = static_cast<float>(s.original_max_position);
    const float low_freq_wavelen = old_len / s.low_freq_factor;
    const float high_freq_wavelen = old_len / s.high_freq_factor;
    for (float& f : inv) {
      const float wavelen = 2.0f * static_cast<float>(M_PI) / f;
      float scaled = wavelen > low_freq_wavelen ? f / s.factor : f;
      if (!(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen)) {
        const float smooth =
            (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        scaled = (1.0f - smooth) * scaled / s.factor + smooth * scaled;
      }
      f = scaled;
    }
  }
  return inv;
}

void AddModelConfigToGguf(const ModelConfig& c, GgufWriter& w) {
  const std::string arch = ArchitectureName(c.arch);
  w.AddString("general.architecture", arch);
  w.AddU32(arch + ".context_length", static_cast<uint32_t>(c.max_position));
  w.AddU32(arch + ".embedding_length", static_cast<uint32_t>(c.hidden_size));
  w.AddU32(arch + ".block_count", static_cast<uint32_t>(c.num_layers));
  w.AddU32(arch + ".feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  w.AddU32(arch + ".attention.head_count", static_cast<uint32_t>(c.num_heads));
  w.AddU32(arch + ".attention.head_count_kv", static_cast<uint32_t>(c.num_kv_heads));
  w.AddF32(arch + ".attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  w.AddF32(arch + ".rope.freq_base", c.rope_theta);
  w.AddU32(arch + ".rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  w.AddU32(arch + ".vocab_size", static_cast<uint32_t>(c.vocab_size));
  if (c.head_dim * c.num_heads != c.hidden_size) {
    w.AddU32(arch + ".attention.key_length", static_cast<uint32_t>(c.head_dim));
    w.AddU32(arch + ".attention.value_length", static_cast<uint32_t>(c.head_dim));
  }
  if (c.rope_scaling.type == RopeScaling::Type::kLinear) {
    w.AddString(arch + ".rope.scaling.type", "linear");
    w.AddF32(arch + ".rope.scaling.factor", c.rope_scaling.factor);
  }
  if (c.sliding_window) {
    w.AddU32(arch + ".attention.sliding_window", static_cast<uint32_t>(*c.sliding_window));
  }
}

}  // namespace jisu
