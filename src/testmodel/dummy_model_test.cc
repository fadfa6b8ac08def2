// Random-weight GGUF files: written, read back through the normal loader, run through the
// forward pass; deterministic per seed; bad options rejected with a clear error.
#include "testmodel/dummy_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "backend/cpu/transformer.h"
#include "core/thread_pool.h"
#include "format/gguf.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "testmodel/model_shapes.h"
#include "testmodel/synthetic_vocab.h"

namespace jisu {
namespace {

namespace fs = std::filesystem;

std::string TempPath(const std::string& name) {
  return (fs::temp_directory_path() / ("jisu_dummy_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::vector<char> ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

ModelConfig SmallLlama() {
  ModelConfig c;
  c.arch = Architecture::kLlama;
  c.vocab_size = 300;
  c.hidden_size = 64;
  c.num_layers = 3;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.intermediate_size = 96;
  c.max_position = 256;
  c.rope_theta = 500000.0f;
  c.rope_scaling.type = RopeScaling::Type::kLlama3;
  c.rope_scaling.factor = 8.0f;
  c.rope_scaling.original_max_position = 64;
  return c;
}

ModelConfig SmallQwen() {
  ModelConfig c = SmallLlama();
  c.arch = Architecture::kQwen2;
  c.rope_scaling = RopeScaling{};
  c.rope_theta = 1e6f;
  c.tie_word_embeddings = true;
  c.attention_bias = true;
  c.vocab_size = 70000;  // uses the pair + byte level of the synthetic vocabulary
  c.rms_norm_eps = 1e-6f;
  return c;
}

// Runs `n` tokens through the model as one prefill and returns the last row's logits.
std::vector<float> LastLogits(const Model& model, const std::vector<int32_t>& ids, int threads) {
  const ModelConfig& c = model.config();
  ThreadPool pool(threads);
  Transformer tf(c, model.weights(), pool);
  KvCacheShape shape{c.num_layers, c.num_kv_heads, c.head_dim, 16, 4};
  auto cache = KvCache::Create(shape);
  EXPECT_TRUE(cache.ok());
  std::vector<int32_t> blocks = {0, 1, 2, 3};
  const int64_t last = static_cast<int64_t>(ids.size()) - 1;
  ForwardBatch batch{
      ids, {BatchSequence{static_cast<int64_t>(ids.size()), 0, blocks}}, std::span(&last, 1)};
  std::vector<float> logits(static_cast<size_t>(c.vocab_size));
  Status st = tf.Forward(batch, **cache, logits.data());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return logits;
}

struct Case {
  const char* type;
  bool qwen;
};

class DummyModelTest : public ::testing::TestWithParam<Case> {};

TEST_P(DummyModelTest, WritesAFileTheLoaderAndForwardPassAccept) {
  const Case& k = GetParam();
  DummyModelOptions o;
  o.config = k.qwen ? SmallQwen() : SmallLlama();
  o.type = *DTypeFromName(k.type);
  o.seed = 7;
  o.threads = 2;
  const std::string path = TempPath(std::string(k.type) + (k.qwen ? "_qwen.gguf" : "_llama.gguf"));
  ASSERT_TRUE(WriteDummyGguf(path, o).ok());
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& got = (*model)->config();
  const ModelConfig& want = o.config;
  EXPECT_EQ(got.arch, want.arch);
  EXPECT_EQ(got.vocab_size, want.vocab_size);
  EXPECT_EQ(got.hidden_size, want.hidden_size);
  EXPECT_EQ(got.num_layers, want.num_layers);
  EXPECT_EQ(got.num_heads, want.num_heads);
  EXPECT_EQ(got.num_kv_heads, want.num_kv_heads);
  EXPECT_EQ(got.head_dim, want.head_dim);
  EXPECT_EQ(got.intermediate_size, want.intermediate_size);
  EXPECT_EQ(got.max_position, want.max_position);
  EXPECT_FLOAT_EQ(got.rope_theta, want.rope_theta);
  EXPECT_FLOAT_EQ(got.rms_norm_eps, want.rms_norm_eps);
  EXPECT_EQ(got.tie_word_embeddings, want.tie_word_embeddings);
  EXPECT_EQ(got.attention_bias, want.attention_bias);

  // Tensor types and shapes (GGUF order: innermost first is hidden by the reader).
  const GgufFile& g = *(*model)->gguf();
  const bool four_bit = o.type == DType::kQ4_0 || o.type == DType::kQ4_1;
  const DType head = four_bit ? DType::kQ8_0 : o.type;
  const GgufTensorInfo* embd = g.FindTensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->dtype, want.tie_word_embeddings ? head : o.type);
  EXPECT_EQ(embd->shape, (std::vector<int64_t>{want.vocab_size, want.hidden_size}));
  const GgufTensorInfo* out = g.FindTensor("output.weight");
  EXPECT_EQ(out != nullptr, !want.tie_word_embeddings);
  if (out) {
    EXPECT_EQ(out->dtype, head);
  }
  const GgufTensorInfo* down = g.FindTensor("blk.2.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->dtype, o.type);
  EXPECT_EQ(down->shape, (std::vector<int64_t>{want.hidden_size, want.intermediate_size}));
  EXPECT_EQ(g.FindTensor("blk.0.attn_q.bias") != nullptr, want.attention_bias);
  EXPECT_EQ(g.FindTensor("blk.0.attn_norm.weight")->dtype, DType::kF32);
  // Llama-3 rope scaling travels as factors; the loader must reproduce the scaled frequencies.
  const auto& factors = (*model)->weights().rope_freq_factors;
  EXPECT_EQ(factors.has_value(), want.rope_scaling.type == RopeScaling::Type::kLlama3);
  if (factors) {
    ModelConfig unscaled = want;
    unscaled.rope_scaling = RopeScaling{};
    const auto base = RopeInverseFrequencies(unscaled), scaled = RopeInverseFrequencies(want);
    ASSERT_EQ(factors->size(), base.size());
    for (size_t i = 0; i < base.size(); ++i) {
      EXPECT_NEAR(base[i] / (*factors)[i], scaled[i], 1e-6f * scaled[i]);
    }
  }

  // Tokenizer: round trip, BOS added, multi-byte tokens used.
  const Tokenizer& tok = (*model)->tokenizer();
  const std::string text = "Hello, the rain in Spain stays mainly in the plain.";
  const std::vector<int32_t> ids = tok.Encode(text, /*add_special=*/true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 256);
  EXPECT_LT(ids.size(), text.size());  // merges apply
  EXPECT_EQ(tok.Decode(std::span<const int32_t>(ids).subspan(1), /*skip_special=*/true), text);
  EXPECT_EQ(tok.eos_id().value_or(-1), 257);

  // Forward pass: finite logits of a sensible size.
  const std::vector<float> logits = LastLogits(**model, ids, 2);
  double sum_sq = 0;
  for (float x : logits) {
    ASSERT_TRUE(std::isfinite(x));
    sum_sq += static_cast<double>(x) * x;
  }
  const double rms = std::sqrt(sum_sq / static_cast<double>(logits.size()));
  EXPECT_GT(rms, 1e-3);
  EXPECT_LT(rms, 100.0);
  fs::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Types, DummyModelTest,
                         ::testing::Values(Case{"f32", false}, Case{"f16", false},
                                           Case{"bf16", true}, Case{"q8_0", false},
                                           Case{"q4_0", false}, Case{"q4_0", true},
                                           Case{"q4_1", true}),
                         [](const auto& info) {
                           return std::string(info.param.type) +
                                  (info.param.qwen ? "_qwen" : "_llama");
                         });

// Gemma 3 at the 270M model's attention shape (head 256, one KV head): the file carries what
// the GGUF reader derives the layer pattern, windows and rope bases from.
TEST(DummyModel, Gemma3RoundTrips) {
  DummyModelOptions o;
  ModelConfig& c = o.config;
  c.arch = Architecture::kGemma3;
  c.vocab_size = 512;
  c.hidden_size = 640;
  c.num_layers = 6;
  c.num_heads = 4;
  c.num_kv_heads = 1;
  c.head_dim = 256;
  c.intermediate_size = 1024;
  c.max_position = 1024;
  c.rope_theta = 1e6f;
  c.rms_norm_eps = 1e-6f;
  c.tie_word_embeddings = true;
  c.qk_norm = true;
  c.sliding_window = 32;
  c.sliding_layers = {1, 1, 1, 1, 1, 0};
  c.query_pre_attn_scalar = 256;
  c.rope_local_theta = 10000.0f;
  o.type = DType::kBF16;
  o.seed = 3;
  o.threads = 2;
  const std::string path = TempPath("gemma3.gguf");
  Status st = WriteDummyGguf(path, o);
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto model = Model::Load(path);
  fs::remove(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& got = (*model)->config();
  EXPECT_EQ(got.arch, Architecture::kGemma3);
  EXPECT_EQ(got.head_dim, 256);
  EXPECT_EQ(got.sliding_window, c.sliding_window);
  EXPECT_EQ(got.sliding_layers, c.sliding_layers);
  EXPECT_TRUE(got.qk_norm);
  EXPECT_FLOAT_EQ(got.query_pre_attn_scalar, 256.0f);
  EXPECT_FLOAT_EQ(got.rope_local_theta, 10000.0f);
  std::vector<int32_t> ids(40);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i * 7 % 512);
  const std::vector<float> logits = LastLogits(**model, ids, 2);
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
}

TEST(DummyModel, SameSeedSameBytesWhateverTheThreads) {
  DummyModelOptions o;
  o.config = SmallLlama();
  o.type = DType::kQ4_0;
  o.seed = 42;
  o.threads = 1;
  const std::string a = TempPath("seed_a.gguf"), b = TempPath("seed_b.gguf"),
                    c = TempPath("seed_c.gguf");
  ASSERT_TRUE(WriteDummyGguf(a, o).ok());
  o.threads = 2;
  ASSERT_TRUE(WriteDummyGguf(b, o).ok());
  o.seed = 43;
  ASSERT_TRUE(WriteDummyGguf(c, o).ok());
  const auto da = ReadAll(a), db = ReadAll(b), dc = ReadAll(c);
  ASSERT_FALSE(da.empty());
  EXPECT_EQ(da, db);
  EXPECT_EQ(da.size(), dc.size());
  EXPECT_NE(da, dc);
  fs::remove(a);
  fs::remove(b);
  fs::remove(c);
}

TEST(DummyModel, RandomRowsHaveTheStatedScale) {
  std::vector<float> v(1 << 16);
  DummyRandomRow(1, 2, 3, 0.0f, 0.02f, v.data(), static_cast<int64_t>(v.size()));
  double sum = 0, sum_sq = 0;
  for (float x : v) {
    sum += x;
    sum_sq += static_cast<double>(x) * x;
  }
  const double mean = sum / v.size();
  const double std = std::sqrt(sum_sq / v.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.001);   // 5 sigma of the mean's error is ~4e-4
  EXPECT_NEAR(std, 0.02, 0.0005);  // ~2.5%
  std::vector<float> w(v.size());
  DummyRandomRow(1, 2, 4, 0.0f, 0.02f, w.data(), static_cast<int64_t>(w.size()));
  EXPECT_NE(v, w);  // rows differ
}

TEST(DummyModel, RejectsBadOptions) {
  const std::string path = TempPath("bad.gguf");
  DummyModelOptions o;
  o.config = SmallLlama();
  o.type = DType::kQ4_K;
  Status st = WriteDummyGguf(path, o);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("q4_k"), std::string::npos) << st.message();
  o.type = DType::kF16;
  o.config.vocab_size = 100;
  st = WriteDummyGguf(path, o);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("vocab"), std::string::npos) << st.message();
  o.config = SmallLlama();
  o.config.num_kv_heads = 3;  // does not divide 4 heads
  EXPECT_FALSE(WriteDummyGguf(path, o).ok());
  EXPECT_FALSE(fs::exists(path));
}

TEST(DummyModel, NamedShapes) {
  auto t = NamedModelShape("tinyllama-1.1b");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->hidden_size, 2048);
  EXPECT_EQ(t->num_layers, 22);
  EXPECT_EQ(t->num_heads, 32);
  EXPECT_EQ(t->num_kv_heads, 4);
  EXPECT_EQ(t->intermediate_size, 5632);
  EXPECT_EQ(t->vocab_size, 32000);
  auto q = NamedModelShape("qwen2.5-0.5b");
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->tie_word_embeddings);
  EXPECT_TRUE(q->attention_bias);
  EXPECT_EQ(q->head_dim, 64);
  auto l = NamedModelShape("llama-3.1-8b");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_EQ(l->vocab_size, 128256);
  for (const std::string& name : NamedModelShapeNames()) EXPECT_TRUE(NamedModelShape(name).ok());
  auto bad = NamedModelShape("gpt-5");
  EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("tinyllama-1.1b"), std::string::npos);
  // Sizes: TinyLlama has 1.1B parameters.
  DummyModelOptions o;
  o.config = *t;
  o.type = DType::kF16;
  EXPECT_NEAR(static_cast<double>(DummyGgufTensorBytes(o)) / 2, 1.1e9, 0.01e9);
}

TEST(SyntheticVocab, SizesAndUniqueness) {
  for (int64_t n : {258, 259, 1000, 32000, 151936}) {
    auto v = MakeSyntheticVocab(n);
    ASSERT_TRUE(v.ok()) << n;
    EXPECT_EQ(static_cast<int64_t>(v->tokens.size()), n);
    EXPECT_EQ(v->types.size(), v->tokens.size());
    EXPECT_EQ(static_cast<int64_t>(v->merges.size()), n - 258);
    std::set<std::string> unique(v->tokens.begin(), v->tokens.end());
    EXPECT_EQ(static_cast<int64_t>(unique.size()), n);
  }
  EXPECT_FALSE(MakeSyntheticVocab(257).ok());
}

}  // namespace
}  // namespace jisu

namespace jisu {
namespace {

TEST(DummyModelSpec, RejectsBadSpecsClearly) {
  EXPECT_TRUE(IsDummyModelSpec("dummy:tinyllama-1.1b"));
  EXPECT_FALSE(IsDummyModelSpec("models/tiny-llama"));
  EXPECT_FALSE(IsDummyModelSpec("/tmp/dummy:x.gguf"));
  auto unknown = LoadDummyModel("dummy:gpt-5");
  EXPECT_EQ(unknown.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("known: tinyllama-1.1b"), std::string::npos);
  auto type = LoadDummyModel("dummy:tinyllama-1.1b:q5_9");
  EXPECT_EQ(type.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(type.status().message().find("q5_9"), std::string::npos);
  auto seed = LoadDummyModel("dummy:tinyllama-1.1b:q4_0:12ab");
  EXPECT_EQ(seed.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(LoadDummyModel("dummy:").status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(LoadDummyModel("dummy:a:b:c:d").status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace jisu
