#include <nlohmann/json.hpp>

#include "model/arch/architectures.h"

namespace jisu {

void AppendAttentionBlock(const AttentionBlock& block, ModelProgram& p) {
  std::vector<Op>& ops = p.layer_ops;
  ops.push_back(
      Op{.code = OpCode::kNorm, .src = Buf::kX, .dst = Buf::kH, .weight = WeightId::kAttnNorm});
  ops.push_back(
      Op{.code = OpCode::kLinear,
         .src = Buf::kH,
         .targets = {{WeightId::kWq, Buf::kQ}, {WeightId::kWk, Buf::kK}, {WeightId::kWv, Buf::kV}},
         .float_activations = block.float_qkv});
  if (block.qkv_bias) {
    ops.push_back(Op{.code = OpCode::kAddBias, .dst = Buf::kQ, .weight = WeightId::kBq});
    ops.push_back(Op{.code = OpCode::kAddBias, .dst = Buf::kK, .weight = WeightId::kBk});
    ops.push_back(Op{.code = OpCode::kAddBias, .dst = Buf::kV, .weight = WeightId::kBv});
  }
  if (block.qk_norm) {
    ops.push_back(Op{.code = OpCode::kHeadNorm, .dst = Buf::kQ, .weight = WeightId::kQNorm});
    ops.push_back(Op{.code = OpCode::kHeadNorm, .dst = Buf::kK, .weight = WeightId::kKNorm});
  }
  ops.push_back(Op{.code = OpCode::kRope});
  ops.push_back(Op{.code = OpCode::kAttention, .src = Buf::kQ, .dst = Buf::kAttn});
  ops.push_back(
      Op{.code = OpCode::kLinear, .src = Buf::kAttn, .targets = {{WeightId::kWo, Buf::kOut}}});
  if (block.post_norm) {
    ops.push_back(Op{.code = OpCode::kNorm,
                     .src = Buf::kOut,
                     .dst = Buf::kOut,
                     .weight = WeightId::kPostAttnNorm});
  }
  ops.push_back(Op{.code = OpCode::kAdd, .src = Buf::kOut, .dst = Buf::kX});
}

void AppendMlpBlock(const MlpBlock& block, ModelProgram& p) {
  std::vector<Op>& ops = p.layer_ops;
  ops.push_back(
      Op{.code = OpCode::kNorm, .src = Buf::kX, .dst = Buf::kH, .weight = WeightId::kFfnNorm});
  ops.push_back(Op{.code = OpCode::kLinear,
                   .src = Buf::kH,
                   .targets = {{WeightId::kWGate, Buf::kGate}, {WeightId::kWUp, Buf::kUp}},
                   .float_activations = block.float_gate_up});
  ops.push_back(
      Op{.code = OpCode::kGatedAct, .src = Buf::kUp, .dst = Buf::kGate, .act = block.act});
  ops.push_back(
      Op{.code = OpCode::kLinear, .src = Buf::kGate, .targets = {{WeightId::kWDown, Buf::kOut}}});
  if (block.post_norm) {
    ops.push_back(Op{.code = OpCode::kNorm,
                     .src = Buf::kOut,
                     .dst = Buf::kOut,
                     .weight = WeightId::kPostFfnNorm});
  }
  ops.push_back(Op{.code = OpCode::kAdd, .src = Buf::kOut, .dst = Buf::kX});
}

Result<float> HfFloat(const nlohmann::json& j, const char* key, float fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) {
    return Status::InvalidArgument(std::string("config.json: '") + key + "' must be a number");
  }
  return it->get<float>();
}

bool HfBool(const nlohmann::json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return fallback;
  return it->get<bool>();
}

}  // namespace jisu
