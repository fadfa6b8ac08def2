// `jisu convert` with K-quant targets: which type each tensor gets (uniform and Q4_K_M), the
// fallbacks for rows that are not a multiple of 256, and that the file loads and runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "convert/hf_to_gguf.h"
#include "format/gguf.h"
#include "model/model.h"
#include "tests/test_paths.h"

namespace jisu {
namespace {

namespace fs = std::filesystem;

const std::string kTiny = (jisu::testing::SourceDir() / "models" / "tiny-llama").string();

TEST(QuantMix, UsesMoreBitsMatchesLlamaCppRule) {
  // 6 layers (tiny-llama): n/8 = 0, 7n/8 = 5 -> layers 2 and 5.
  std::string got;
  for (int i = 0; i < 6; ++i) got += UsesMoreBits(i, 6) ? '1' : '0';
  EXPECT_EQ(got, "001001");
  // 22 layers (TinyLlama-1.1B): first 2, last 3 (from 19), and every third from layer 4.
  got.clear();
  for (int i = 0; i < 22; ++i) got += UsesMoreBits(i, 22) ? '1' : '0';
  EXPECT_EQ(got, "1100100100100100100111");
}

DType TypeOf(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.FindTensor(name);
  EXPECT_NE(t, nullptr) << name;
  return t ? t->dtype : DType::kF32;
}

struct Converted {
  explicit Converted(const ConvertOptions& options, const std::string& tag) {
    path = fs::temp_directory_path() /
           ("jisu_quant_mix_" + tag + "_" + std::to_string(::getpid()) + ".gguf");
    status = ConvertHfToGguf(kTiny, path.string(), options);
  }
  ~Converted() { fs::remove(path); }
  fs::path path;
  Status status;
};

TEST(QuantMix, Q4_K_MTensorTypes) {
  ConvertOptions options;
  options.type = DType::kQ4_K;
  options.mix = QuantMix::kQ4_K_M;
  Converted c(options, "q4_k_m");
  ASSERT_TRUE(c.status.ok()) << c.status.ToString();
  auto f = GgufFile::Open(c.path.string());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  // tiny-llama: hidden 384 (not a multiple of 256) so only ffn_down ([384, 1024]) can hold a
  // K-quant; the other matrices take the fallbacks (Q4_K -> Q4_1, Q6_K -> Q8_0).
  for (int i = 0; i < 6; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    const bool more = UsesMoreBits(i, 6);
    EXPECT_EQ(TypeOf(g, p + "ffn_down.weight"), more ? DType::kQ6_K : DType::kQ4_K) << i;
    EXPECT_EQ(TypeOf(g, p + "attn_v.weight"), more ? DType::kQ8_0 : DType::kQ4_1) << i;
    EXPECT_EQ(TypeOf(g, p + "attn_q.weight"), DType::kQ4_1) << i;
    EXPECT_EQ(TypeOf(g, p + "ffn_up.weight"), DType::kQ4_1) << i;
    EXPECT_EQ(TypeOf(g, p + "attn_norm.weight"), DType::kF32) << i;
  }
  EXPECT_EQ(TypeOf(g, "output.weight"), DType::kQ8_0);  // Q6_K, rows of 384 -> Q8_0
  EXPECT_EQ(TypeOf(g, "token_embd.weight"), DType::kQ4_1);
  auto ft = g.GetInt("general.file_type");
  ASSERT_TRUE(ft.ok());
  EXPECT_EQ(*ft, 15);  // LLAMA_FTYPE_MOSTLY_Q4_K_M

  auto model = Model::Load(c.path.string());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
}

TEST(QuantMix, UniformKQuantTypes) {
  for (DType t : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    ConvertOptions options;
    options.type = t;
    Converted c(options, std::string(DTypeName(t)));
    ASSERT_TRUE(c.status.ok()) << c.status.ToString();
    auto f = GgufFile::Open(c.path.string());
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(TypeOf(**f, "blk.3.ffn_down.weight"), t);
    EXPECT_EQ(TypeOf(**f, "blk.3.ffn_gate.weight"),
              t == DType::kQ4_K ? DType::kQ4_1 : DType::kQ8_0);
  }
}

TEST(QuantMix, Q4_K_MNeedsQ4_K) {
  ConvertOptions options;
  options.type = DType::kQ8_0;
  options.mix = QuantMix::kQ4_K_M;
  Converted c(options, "bad");
  EXPECT_FALSE(c.status.ok());
}

}  // namespace
}  // namespace jisu
