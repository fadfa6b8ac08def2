#include "model/layer_program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/arch/architectures.h"
#include "model/model_config.h"

namespace jisu {
namespace {

ModelConfig Base(Architecture arch) {
  ModelConfig c;
  c.arch = arch;
  c.vocab_size = 64;
  c.hidden_size = 32;
  c.num_layers = 12;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.intermediate_size = 48;
  c.max_position = 256;
  return c;
}

std::vector<OpCode> Codes(const ModelProgram& p) {
  std::vector<OpCode> out;
  for (const Op& op : p.layer_ops) out.push_back(op.code);
  return out;
}

TEST(LayerProgramTest, EveryArchitectureBuildsAValidProgram) {
  for (const ArchitectureDef* def : AllArchitectures()) {
    ModelConfig c = Base(def->arch);
    ModelProgram p = BuildModelProgram(c);
    EXPECT_TRUE(p.Validate(c.num_layers).ok()) << def->name;
    EXPECT_TRUE(p.Uses(WeightId::kWq) && p.Uses(WeightId::kWDown)) << def->name;
    EXPECT_EQ(ArchitectureName(def->arch), std::string(def->name));
  }
}

TEST(LayerProgramTest, LlamaIsNormQkvRopeAttentionOAddNormGateUpActDownAdd) {
  const ModelProgram p = BuildModelProgram(Base(Architecture::kLlama));
  const std::vector<OpCode> want = {OpCode::kNorm,      OpCode::kLinear, OpCode::kRope,
                                    OpCode::kAttention, OpCode::kLinear, OpCode::kAdd,
                                    OpCode::kNorm,      OpCode::kLinear, OpCode::kGatedAct,
                                    OpCode::kLinear,    OpCode::kAdd};
  EXPECT_EQ(Codes(p), want);
  EXPECT_FLOAT_EQ(p.attn_scale, 0.25f);
  EXPECT_EQ(p.ropes.size(), 1u);
  EXPECT_FALSE(p.Uses(WeightId::kBq));
}

TEST(LayerProgramTest, Qwen2AddsBiasesQwen3AddsHeadNorms) {
  ModelConfig q2 = Base(Architecture::kQwen2);
  q2.attention_bias = true;
  const ModelProgram p2 = BuildModelProgram(q2);
  EXPECT_TRUE(p2.Uses(WeightId::kBq) && p2.Uses(WeightId::kBk) && p2.Uses(WeightId::kBv));
  EXPECT_FALSE(p2.Uses(WeightId::kQNorm));

  const ModelProgram p3 = BuildModelProgram(Base(Architecture::kQwen3));
  EXPECT_TRUE(p3.Uses(WeightId::kQNorm) && p3.Uses(WeightId::kKNorm));
  EXPECT_FALSE(p3.Uses(WeightId::kBq));
  // The head norms come after the q/k/v product and before rope.
  const std::vector<OpCode> codes = Codes(p3);
  const auto rope = std::find(codes.begin(), codes.end(), OpCode::kRope) - codes.begin();
  EXPECT_EQ(codes[rope - 1], OpCode::kHeadNorm);
  EXPECT_EQ(codes[rope - 2], OpCode::kHeadNorm);
  EXPECT_EQ(codes[rope - 3], OpCode::kLinear);
}

TEST(LayerProgramTest, Gemma3InterleavesLocalAndGlobalLayers) {
  ModelConfig c = Base(Architecture::kGemma3);
  c.sliding_window = 8;
  c.sliding_layers.assign(12, 1);
  c.sliding_layers[5] = c.sliding_layers[11] = 0;
  c.rope_theta = 1e6f;
  c.rope_local_theta = 1e4f;
  c.query_pre_attn_scalar = 64;
  const ModelProgram p = BuildModelProgram(c);
  ASSERT_TRUE(p.Validate(12).ok());
  EXPECT_FLOAT_EQ(p.embed_scale, std::sqrt(32.0f));
  EXPECT_FLOAT_EQ(p.attn_scale, 0.125f);
  ASSERT_EQ(p.ropes.size(), 2u);
  for (int64_t l = 0; l < 12; ++l) {
    const bool global = l == 5 || l == 11;
    EXPECT_EQ(p.layers[l].window, global ? 0 : 8) << l;
    EXPECT_EQ(p.layers[l].rope, global ? 0 : 1) << l;
  }
  // Local base 1e4 vs global 1e6: the second frequency differs.
  EXPECT_GT(p.ropes[1].inv_freq[1], p.ropes[0].inv_freq[1]);
  for (WeightId id : {WeightId::kPostAttnNorm, WeightId::kPostFfnNorm, WeightId::kQNorm}) {
    EXPECT_TRUE(p.Uses(id)) << LayerWeightName(id);
  }
  // The products its norms feed read float activations (measured, see gemma3.cc).
  int float_products = 0;
  for (const Op& op : p.layer_ops) float_products += op.float_activations;
  EXPECT_EQ(float_products, 2);
  bool gelu = false;
  for (const Op& op : p.layer_ops)
    gelu |= op.code == OpCode::kGatedAct && op.act == Activation::kGeluTanh;
  EXPECT_TRUE(gelu);
}

TEST(LayerProgramTest, ValidateNamesTheBadOp) {
  ModelConfig c = Base(Architecture::kLlama);
  ModelProgram p = BuildModelProgram(c);
  p.layer_ops[0].weight = WeightId::kCount;  // a norm without its weight
  const Status s = p.Validate(c.num_layers);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("norm"), std::string::npos) << s.ToString();
  p = BuildModelProgram(c);
  EXPECT_FALSE(p.Validate(c.num_layers + 1).ok());
}

TEST(LayerProgramTest, ConfigFromHfReadsQwen3AndGemma3) {
  nlohmann::json q = {{"architectures", {"Qwen3ForCausalLM"}},
                      {"vocab_size", 64},
                      {"hidden_size", 32},
                      {"num_hidden_layers", 2},
                      {"num_attention_heads", 4},
                      {"num_key_value_heads", 2},
                      {"head_dim", 16},
                      {"intermediate_size", 48}};
  auto qc = ModelConfigFromHf(q);
  ASSERT_TRUE(qc.ok()) << qc.status().ToString();
  EXPECT_EQ(qc->arch, Architecture::kQwen3);
  EXPECT_TRUE(qc->qk_norm);
  EXPECT_FALSE(qc->attention_bias);

  nlohmann::json g = q;
  g["architectures"] = {"Gemma3ForCausalLM"};
  g["num_hidden_layers"] = 3;
  g["sliding_window"] = 4;
  g["layer_types"] = {"sliding_attention", "sliding_attention", "full_attention"};
  g["query_pre_attn_scalar"] = 8;
  auto gc = ModelConfigFromHf(g);
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_EQ(gc->arch, Architecture::kGemma3);
  EXPECT_TRUE(gc->LayerSlides(0) && gc->LayerSlides(1) && !gc->LayerSlides(2));
  EXPECT_FLOAT_EQ(gc->norm_weight_offset, 1.0f);
  EXPECT_TRUE(gc->tie_word_embeddings);

  g["hidden_activation"] = "relu";
  EXPECT_EQ(ModelConfigFromHf(g).status().code(), Status::Code::kUnsupported);
  g["hidden_activation"] = "gelu_pytorch_tanh";
  g["layer_types"] = {"sliding_attention"};
  EXPECT_FALSE(ModelConfigFromHf(g).ok());
  g["architectures"] = {"Gemma2ForCausalLM"};
  const Status unknown = ModelConfigFromHf(g).status();
  EXPECT_EQ(unknown.code(), Status::Code::kUnsupported);
  EXPECT_NE(unknown.message().find("Gemma3ForCausalLM"), std::string::npos);
}

}  // namespace
}  // namespace jisu
