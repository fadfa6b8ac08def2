// The CUDA backend's matching of layer programs to its kernel sequences: runs without a GPU.
#include "backend/cuda/cuda_program.h"

#include <gtest/gtest.h>

#include "backend/cuda/device_weight.h"
#include "model/arch/architectures.h"
#include "model/model_config.h"

namespace jisu::cuda {
namespace {

using K = StepKind;

std::vector<K> Kinds(const std::vector<StepOp>& ops) {
  std::vector<K> kinds;
  for (const StepOp& op : ops) kinds.push_back(op.kind);
  return kinds;
}
std::vector<K> Kinds(const LayerPlan& plan) { return Kinds(plan.ops); }

ModelProgram Program(const AttentionBlock& attn, const MlpBlock& mlp) {
  ModelProgram p;
  p.ropes.push_back(RopeTable{{1.0f}});
  AppendAttentionBlock(attn, p);
  AppendMlpBlock(mlp, p);
  return p;
}

TEST(CudaProgramTest, LlamaLayer) {
  auto plan = PlanLayer(Program({}, {}), "llama");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->qkv_bias);
  EXPECT_EQ(Kinds(*plan),
            (std::vector<K>{K::kNormIn, K::kQkvProject, K::kRopeKv, K::kAttention, K::kOutProject,
                            K::kNormIn, K::kGateUpProject, K::kGatedAct, K::kDownProject}));
  EXPECT_EQ(plan->ops[0].norm, WeightId::kAttnNorm);
  EXPECT_EQ(plan->ops[5].norm, WeightId::kFfnNorm);
  EXPECT_EQ(plan->ops[4].norm, WeightId::kCount);  // no post norm
}

// Small steps: five launches a layer. Each norm rides in the residual GEMV before it (the last
// one's in the next layer's first), the rope and K/V write in the qkv GEMV, SiLU in gate/up.
TEST(CudaProgramTest, LlamaGemvLayer) {
  auto plan = PlanLayer(Program({}, {}), "llama");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const std::vector<StepOp>& g = plan->gemv_ops;
  EXPECT_EQ(Kinds(g), (std::vector<K>{K::kQkvRopeGemv, K::kAttention, K::kOutGemv, K::kGateActGemv,
                                      K::kDownGemv}));
  EXPECT_EQ(g[0],
            (StepOp{.kind = K::kQkvRopeGemv, .norm = WeightId::kAttnNorm, .fused_norm = true}));
  EXPECT_EQ(g[2], (StepOp{.kind = K::kOutGemv, .next_norm = WeightId::kFfnNorm}));
  EXPECT_EQ(g[3],
            (StepOp{.kind = K::kGateActGemv, .norm = WeightId::kFfnNorm, .fused_norm = true}));
  EXPECT_EQ(g[4],
            (StepOp{.kind = K::kDownGemv, .next_norm = WeightId::kAttnNorm, .next_layer = true}));
}

// The plan follows the ops, not the architecture's name: Llama's layer under other tags gives
// the same launches, per op and fused.
TEST(CudaProgramTest, SameOpsSamePlanUnderAnyTag) {
  auto llama = PlanLayer(Program({}, {}), "llama");
  ASSERT_TRUE(llama.ok());
  for (const char* tag : {"qwen3", "gemma3", "custom"}) {
    auto other = PlanLayer(Program({}, {}), tag);
    ASSERT_TRUE(other.ok()) << tag;
    EXPECT_EQ(other->ops, llama->ops) << tag;
    EXPECT_EQ(other->gemv_ops, llama->gemv_ops) << tag;
  }
}

TEST(CudaProgramTest, Qwen2BiasFusesIntoRope) {
  auto plan = PlanLayer(Program({.qkv_bias = true}, {}), "qwen2");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->qkv_bias);
  ASSERT_EQ(plan->ops[2].kind, K::kRopeKv);
  EXPECT_TRUE(plan->ops[2].fuse_bias);
  ASSERT_EQ(plan->gemv_ops[0].kind, K::kQkvRopeGemv);
  EXPECT_TRUE(plan->gemv_ops[0].fuse_bias);
}

// The bias precedes the head norms, so it cannot ride in the rope kernel.
TEST(CudaProgramTest, BiasBeforeHeadNormIsItsOwnKernel) {
  auto plan = PlanLayer(Program({.qkv_bias = true, .qk_norm = true}, {}), "qwen3");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->head_norm);
  const std::vector<K> kinds = Kinds(*plan);
  EXPECT_EQ(std::vector<K>(kinds.begin(), kinds.begin() + 5),
            (std::vector<K>{K::kNormIn, K::kQkvProject, K::kQkvBias, K::kHeadNorm, K::kRopeKv}));
  EXPECT_FALSE(plan->ops[4].fuse_bias);
  // Small steps: the head norms keep q/k/v per op, the MLP half fuses; the down GEMV writes no
  // norm input (the next layer's norm is a kernel of its own, its product not a GEMV consumer).
  const std::vector<StepOp>& g = plan->gemv_ops;
  EXPECT_EQ(Kinds(g),
            (std::vector<K>{K::kNormIn, K::kQkvProject, K::kQkvBias, K::kHeadNorm, K::kRopeKv,
                            K::kAttention, K::kOutGemv, K::kGateActGemv, K::kDownGemv}));
  EXPECT_EQ(g[6].next_norm, WeightId::kFfnNorm);
  EXPECT_TRUE(g[7].fused_norm);
  EXPECT_EQ(g[8].next_norm, WeightId::kCount);
}

TEST(CudaProgramTest, Gemma3PostNormsAndGelu) {
  auto plan = PlanLayer(Program({.qk_norm = true, .post_norm = true, .float_qkv = true},
                                {.act = Activation::kGeluTanh, .post_norm = true}),
                        "gemma3");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // Post norms need the whole product before the add, and the GEMVs have no GELU: per op.
  EXPECT_EQ(plan->gemv_ops, plan->ops);
  EXPECT_EQ(Kinds(*plan), (std::vector<K>{K::kNormIn, K::kQkvProject, K::kHeadNorm, K::kRopeKv,
                                          K::kAttention, K::kOutProject, K::kNormIn,
                                          K::kGateUpProject, K::kGatedAct, K::kDownProject}));
  EXPECT_EQ(plan->ops[5].norm, WeightId::kPostAttnNorm);
  EXPECT_EQ(plan->ops[9].norm, WeightId::kPostFfnNorm);
  EXPECT_EQ(plan->ops[8].act, Activation::kGeluTanh);
}

// A post norm keeps its product per op; the norm after it stays a kernel, and the GEMV that
// consumes its output reads it as is.
TEST(CudaProgramTest, NormWithoutAGemvProducerStaysAKernel) {
  auto plan = PlanLayer(Program({.post_norm = true}, {}), "custom");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const std::vector<StepOp>& g = plan->gemv_ops;
  EXPECT_EQ(Kinds(g), (std::vector<K>{K::kQkvRopeGemv, K::kAttention, K::kOutProject, K::kNormIn,
                                      K::kGateActGemv, K::kDownGemv}));
  EXPECT_TRUE(g[0].fused_norm);
  EXPECT_EQ(g[2].norm, WeightId::kPostAttnNorm);
  EXPECT_EQ(g[4], (StepOp{.kind = K::kGateActGemv, .norm = WeightId::kFfnNorm}));
  EXPECT_EQ(g[5],
            (StepOp{.kind = K::kDownGemv, .next_norm = WeightId::kAttnNorm, .next_layer = true}));
}

// Every architecture the model loader knows has a CUDA plan.
TEST(CudaProgramTest, EveryArchitecturePlans) {
  for (Architecture arch : {Architecture::kLlama, Architecture::kMistral, Architecture::kQwen2,
                            Architecture::kQwen3, Architecture::kGemma3, Architecture::kSmolLM3}) {
    ModelConfig c;
    c.arch = arch;
    c.vocab_size = 64;
    c.hidden_size = 64;
    c.num_layers = 6;
    c.num_heads = 2;
    c.num_kv_heads = 1;
    c.head_dim = 32;
    c.intermediate_size = 128;
    c.max_position = 128;
    c.attention_bias = arch == Architecture::kQwen2;
    c.qk_norm = arch == Architecture::kQwen3 || arch == Architecture::kGemma3;
    if (arch == Architecture::kGemma3) {
      c.sliding_window = 16;
      c.sliding_layers = {1, 1, 1, 1, 1, 0};
    }
    auto plan = PlanLayer(BuildModelProgram(c), ArchitectureName(arch));
    EXPECT_TRUE(plan.ok()) << ArchitectureName(arch) << ": " << plan.status().ToString();
  }
}

// What the kernels lack is refused with the op's index and name.
TEST(CudaProgramTest, RefusesUnknownSequencesByName) {
  ModelProgram p = Program({}, {});
  // A residual add with no product before it.
  p.layer_ops.insert(p.layer_ops.begin(), Op{.code = OpCode::kAdd, .src = Buf::kH, .dst = Buf::kX});
  auto plan = PlanLayer(p, "custom");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Status::Code::kUnsupported);
  EXPECT_NE(plan.status().message().find("custom's layer op 0 (add)"), std::string::npos)
      << plan.status().ToString();

  ModelProgram q = Program({}, {});
  // The o product without its residual add.
  q.layer_ops.erase(q.layer_ops.begin() + 5);
  plan = PlanLayer(q, "custom");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("op 4 (linear)"), std::string::npos)
      << plan.status().ToString();

  ModelProgram r = Program({.qkv_bias = true}, {});
  r.layer_ops.erase(r.layer_ops.begin() + 3);  // the k bias
  EXPECT_FALSE(PlanLayer(r, "custom").ok());
}

}  // namespace
}  // namespace jisu::cuda

namespace jisu {
namespace {

// Until a quantized type has its upload and kernels, allocating one is refused before any
// device memory is touched (so this runs without a GPU), and every host type is stored as BF16.
TEST(DeviceWeightTest, TypesWithoutKernelsAreRefused) {
  DeviceWeight w;
  const Status st = w.Allocate(DType::kQ4_0, 64, 64);
  EXPECT_EQ(st.code(), Status::Code::kUnsupported);
  EXPECT_NE(st.message().find("q4_0"), std::string::npos) << st.ToString();
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(DeviceStorageType({DType::kQ4_K, DType::kQ6_K}), DType::kBF16);
  EXPECT_EQ(DeviceStorageType({DType::kBF16}), DType::kBF16);
}

}  // namespace
}  // namespace jisu
