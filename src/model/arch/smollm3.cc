// SmolLM3: Llama's layers, except that every fourth layer (by default) encodes no position:
// its q and k are not rotated ("NoPE"). Written as a second rope table whose frequencies are
// all zero (a rotation by angle 0 is exact identity), so no backend needs to know.
#include "format/gguf.h"
#include "model/arch/architectures.h"

namespace jisu {
namespace {

// llama.cpp hard-codes the interval for GGUF files (no metadata key carries it).
constexpr int64_t kNoRopeInterval = 4;

std::vector<uint8_t> RopeLayersByInterval(int64_t layers, int64_t interval) {
  std::vector<uint8_t> rope(static_cast<size_t>(layers), 1);
  for (int64_t l = 0; l < layers; ++l) {
    if ((l + 1) % interval == 0) rope[static_cast<size_t>(l)] = 0;
  }
  return rope;
}

Status ReadSmolLM3Hf(const nlohmann::json& j, ModelConfig& c) {
  if (HfBool(j, "use_sliding_window", false)) {
    return Status::Unsupported("config.json: SmolLM3 use_sliding_window is not supported");
  }
  if (auto it = j.find("no_rope_layers"); it != j.end() && it->is_array()) {
    if (static_cast<int64_t>(it->size()) != c.num_layers) {
      return Status::InvalidArgument("config.json: no_rope_layers needs one entry per layer");
    }
    c.rope_layers.clear();
    for (const auto& v : *it) {
      if (!v.is_number_integer() || (v.get<int64_t>() != 0 && v.get<int64_t>() != 1)) {
        return Status::InvalidArgument("config.json: no_rope_layers entries must be 0 or 1");
      }
      c.rope_layers.push_back(static_cast<uint8_t>(v.get<int64_t>()));  // 1: rotates
    }
    return Status::Ok();
  }
  int64_t interval = kNoRopeInterval;
  if (auto it = j.find("no_rope_layer_interval"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1) {
      return Status::InvalidArgument("config.json: no_rope_layer_interval must be >= 1");
    }
    interval = it->get<int64_t>();
  }
  c.rope_layers = RopeLayersByInterval(c.num_layers, interval);
  return Status::Ok();
}

Status ReadSmolLM3Gguf(const GgufFile&, ModelConfig& c) {
  c.rope_layers = RopeLayersByInterval(c.num_layers, kNoRopeInterval);
  return Status::Ok();
}

Status CheckSmolLM3Gguf(const ModelConfig& c) {
  if (c.rope_layers != RopeLayersByInterval(c.num_layers, kNoRopeInterval)) {
    return Status::Unsupported(
        "this SmolLM3 config (which layers skip rope) cannot be expressed in GGUF metadata");
  }
  return Status::Ok();
}

void BuildSmolLM3(const ModelConfig& c, ModelProgram& p) {
  p.ropes.push_back(RopeTable{std::vector<float>(static_cast<size_t>(c.head_dim / 2), 0.0f)});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    if (!c.rope_layers.empty() && c.rope_layers[static_cast<size_t>(l)] == 0) {
      p.layers[static_cast<size_t>(l)].rope = 1;
    }
  }
  AppendAttentionBlock({.qkv_bias = c.attention_bias}, p);
  AppendMlpBlock({.act = Activation::kSilu}, p);
}

}  // namespace

extern const ArchitectureDef kSmolLM3Arch = {
    Architecture::kSmolLM3, "smollm3",    "SmolLM3ForCausalLM", "smollm3", ReadSmolLM3Hf,
    ReadSmolLM3Gguf,        BuildSmolLM3, CheckSmolLM3Gguf,     true};

}  // namespace jisu
