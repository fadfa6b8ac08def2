#include "model/layer_program.h"

#include <algorithm>
#include <cmath>

#include "model/arch/architectures.h"
#include "model/model_config.h"

namespace jisu {

const char* LayerWeightName(WeightId id) {
  switch (id) {
    case WeightId::kAttnNorm:
      return "attn_norm.weight";
    case WeightId::kWq:
      return "attn_q.weight";
    case WeightId::kWk:
      return "attn_k.weight";
    case WeightId::kWv:
      return "attn_v.weight";
    case WeightId::kBq:
      return "attn_q.bias";
    case WeightId::kBk:
      return "attn_k.bias";
    case WeightId::kBv:
      return "attn_v.bias";
    case WeightId::kQNorm:
      return "attn_q_norm.weight";
    case WeightId::kKNorm:
      return "attn_k_norm.weight";
    case WeightId::kWo:
      return "attn_output.weight";
    case WeightId::kPostAttnNorm:
      return "post_attention_norm.weight";
    case WeightId::kFfnNorm:
      return "ffn_norm.weight";
    case WeightId::kWGate:
      return "ffn_gate.weight";
    case WeightId::kWUp:
      return "ffn_up.weight";
    case WeightId::kWDown:
      return "ffn_down.weight";
    case WeightId::kPostFfnNorm:
      return "post_ffw_norm.weight";
    case WeightId::kCount:
      break;
  }
  return "?";
}

const char* OpName(OpCode code) {
  switch (code) {
    case OpCode::kNorm:
      return "norm";
    case OpCode::kHeadNorm:
      return "head_norm";
    case OpCode::kAddBias:
      return "add_bias";
    case OpCode::kRope:
      return "rope";
    case OpCode::kGatedAct:
      return "gated_act";
    case OpCode::kAdd:
      return "add";
    case OpCode::kLinear:
      return "linear";
    case OpCode::kAttention:
      return "attention";
  }
  return "?";
}

bool IsNormWeight(WeightId id) {
  switch (id) {
    case WeightId::kAttnNorm:
    case WeightId::kQNorm:
    case WeightId::kKNorm:
    case WeightId::kPostAttnNorm:
    case WeightId::kFfnNorm:
    case WeightId::kPostFfnNorm:
      return true;
    default:
      return false;
  }
}

std::pair<int64_t, int64_t> LayerWeightShape(const ModelConfig& c, WeightId id) {
  const int64_t h = c.hidden_size, f = c.intermediate_size;
  switch (id) {
    case WeightId::kWq:
      return {c.q_dim(), h};
    case WeightId::kWk:
    case WeightId::kWv:
      return {c.kv_dim(), h};
    case WeightId::kWo:
      return {h, c.q_dim()};
    case WeightId::kWGate:
    case WeightId::kWUp:
      return {f, h};
    case WeightId::kWDown:
      return {h, f};
    case WeightId::kBq:
      return {c.q_dim(), 0};
    case WeightId::kBk:
    case WeightId::kBv:
      return {c.kv_dim(), 0};
    case WeightId::kQNorm:
    case WeightId::kKNorm:
      return {c.head_dim, 0};
    default:
      return {h, 0};
  }
}

bool IsPerTokenOp(OpCode code) { return code != OpCode::kLinear && code != OpCode::kAttention; }

std::vector<WeightId> ModelProgram::UsedWeights() const {
  std::vector<WeightId> out;
  auto add = [&](WeightId id) {
    if (id != WeightId::kCount && std::find(out.begin(), out.end(), id) == out.end()) {
      out.push_back(id);
    }
  };
  for (const Op& op : layer_ops) {
    add(op.weight);
    for (const LinearTarget& t : op.targets) add(t.weight);
  }
  return out;
}

bool ModelProgram::Uses(WeightId id) const {
  const std::vector<WeightId> used = UsedWeights();
  return std::find(used.begin(), used.end(), id) != used.end();
}

Status ModelProgram::Validate(int64_t num_layers) const {
  auto bad = [](size_t i, const Op& op, const std::string& why) {
    return Status::InvalidArgument("layer program: op " + std::to_string(i) + " (" +
                                   OpName(op.code) + "): " + why);
  };
  if (static_cast<int64_t>(layers.size()) != num_layers) {
    return Status::InvalidArgument("layer program: one LayerParams per layer expected");
  }
  if (ropes.empty()) return Status::InvalidArgument("layer program: no rope table");
  for (const LayerParams& l : layers) {
    if (l.rope < 0 || l.rope >= static_cast<int>(ropes.size()) || l.window < 0) {
      return Status::InvalidArgument("layer program: bad layer parameters");
    }
  }
  if (!(embed_scale > 0) || !std::isfinite(attn_scale) || !(attn_scale > 0) ||
      !(final_logit_softcap >= 0) || !(norm_eps > 0)) {
    return Status::InvalidArgument("layer program: bad scale, softcap or eps");
  }
  for (size_t i = 0; i < layer_ops.size(); ++i) {
    const Op& op = layer_ops[i];
    const bool has_weight = op.weight != WeightId::kCount;
    const bool needs_weight =
        op.code == OpCode::kNorm || op.code == OpCode::kHeadNorm || op.code == OpCode::kAddBias;
    if (has_weight != needs_weight) return bad(i, op, "weight given or missing");
    if ((op.code == OpCode::kLinear) != !op.targets.empty() || op.targets.size() > 3) {
      return bad(i, op, "1-3 targets for a linear op, none for others");
    }
    if (op.code == OpCode::kHeadNorm && op.dst != Buf::kQ && op.dst != Buf::kK) {
      return bad(i, op, "head norm applies to kQ or kK");
    }
    if (op.src >= Buf::kCount || op.dst >= Buf::kCount) return bad(i, op, "bad buffer");
  }
  return Status::Ok();
}

ModelProgram BuildModelProgram(const ModelConfig& config,
                               const std::vector<float>* rope_freq_factors) {
  ModelProgram p;
  p.norm_eps = config.rms_norm_eps;
  p.rope_style = config.rope_style;
  p.attn_scale = 1.0f / std::sqrt(static_cast<float>(config.head_dim));
  p.final_logit_softcap = config.final_logit_softcap;
  p.ropes.push_back(RopeTable{RopeInverseFrequencies(config)});
  if (rope_freq_factors) {
    std::vector<float>& inv = p.ropes[0].inv_freq;
    for (size_t i = 0; i < inv.size() && i < rope_freq_factors->size(); ++i) {
      inv[i] /= (*rope_freq_factors)[i];
    }
  }
  p.layers.assign(static_cast<size_t>(config.num_layers), LayerParams{});
  for (int64_t l = 0; l < config.num_layers; ++l) {
    if (config.LayerSlides(l)) p.layers[static_cast<size_t>(l)].window = *config.sliding_window;
  }
  FindArchitecture(config.arch).build(config, p);
  return p;
}

}  // namespace jisu
