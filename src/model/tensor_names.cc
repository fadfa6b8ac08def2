#include "model/tensor_names.h"

#include <array>
#include <charconv>
#include <utility>

namespace jisu {
namespace {

constexpr std::array<std::pair<const char*, const char*>, 3> kGlobal = {{
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
}};

constexpr std::array<std::pair<const char*, const char*>, 13> kLayer = {{
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
}};

constexpr std::array<std::pair<const char*, const char*>, 1> kLlamaNorms = {{
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
}};

constexpr std::array<std::pair<const char*, const char*>, 3> kGemmaNorms = {{
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
    {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
}};

// The layer names of `arch`: the common table, then its norms.
template <typename Fn>
bool ForEachLayerName(Architecture arch, Fn&& fn) {
  for (const auto& [c, h] : kLayer) {
    if (fn(c, h)) return true;
  }
  if (arch == Architecture::kGemma3) {
    for (const auto& [c, h] : kGemmaNorms) {
      if (fn(c, h)) return true;
    }
    return false;
  }
  for (const auto& [c, h] : kLlamaNorms) {
    if (fn(c, h)) return true;
  }
  return false;
}

// Splits "<prefix><layer>.<rest>" into (layer, rest).
std::optional<std::pair<std::string, std::string>> SplitLayer(const std::string& name,
                                                              const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size()) return std::nullopt;
  const std::string layer = name.substr(prefix.size(), dot - prefix.size());
  int value = 0;
  auto [ptr, ec] = std::from_chars(layer.data(), layer.data() + layer.size(), value);
  if (ec != std::errc() || ptr != layer.data() + layer.size()) return std::nullopt;
  return std::make_pair(layer, name.substr(dot + 1));
}

}  // namespace

std::string LayerTensorName(int64_t layer, const char* suffix) {
  return "blk." + std::to_string(layer) + "." + suffix;
}

std::optional<std::string> HfTensorName(const std::string& canonical, Architecture arch) {
  for (const auto& [c, h] : kGlobal) {
    if (canonical == c) return std::string(h);
  }
  auto split = SplitLayer(canonical, "blk.");
  if (!split) return std::nullopt;
  std::optional<std::string> out;
  ForEachLayerName(arch, [&](const char* c, const char* h) {
    if (split->second != c) return false;
    out = "model.layers." + split->first + "." + h;
    return true;
  });
  return out;
}

std::optional<std::string> CanonicalFromHf(const std::string& hf, Architecture arch) {
  for (const auto& [c, h] : kGlobal) {
    if (hf == h) return std::string(c);
  }
  auto split = SplitLayer(hf, "model.layers.");
  if (!split) return std::nullopt;
  std::optional<std::string> out;
  ForEachLayerName(arch, [&](const char* c, const char* h) {
    if (split->second != h) return false;
    out = "blk." + split->first + "." + c;
    return true;
  });
  return out;
}

}  // namespace jisu
