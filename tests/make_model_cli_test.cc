// `jisu make-model` and `jisu info --system` end to end: a file made from a config.json is
// loaded unmodified by generate, bench and perplexity; bad arguments fail with one clear line.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/test_paths.h"

namespace jisu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Outcome {
  int exit_code = -1;
  bool signaled = false;
  std::string out, err;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class MakeModelCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("jisu_mm_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Outcome Jisu(const std::vector<std::string>& args) {
    std::string cmd = std::string("timeout 300 ") + jisu::testing::JisuCommand();
    for (const auto& a : args) cmd += " '" + a + "'";  // test arguments hold no quotes
    cmd += " >'" + (dir_ / "out").string() + "' 2>'" + (dir_ / "err").string() + "' </dev/null";
    const int status = std::system(cmd.c_str());
    Outcome r;
    r.out = Slurp(dir_ / "out");
    r.err = Slurp(dir_ / "err");
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    r.signaled = WIFSIGNALED(status) || r.exit_code >= 124;
    return r;
  }

  fs::path Write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p;
  }

  void ExpectCleanError(const Outcome& r, const std::string& needle) {
    EXPECT_FALSE(r.signaled) << r.err;
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err.rfind("jisu: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
  }

  fs::path dir_;
};

constexpr const char* kSmallConfig = R"({
  "architectures": ["Qwen2ForCausalLM"], "vocab_size": 1000, "hidden_size": 64,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "intermediate_size": 128, "max_position_embeddings": 512, "rope_theta": 1000000.0,
  "rms_norm_eps": 1e-6, "tie_word_embeddings": true})";

TEST_F(MakeModelCliTest, FileFromConfigRunsThroughGenerateBenchAndPerplexity) {
  const std::string config = Write("config.json", kSmallConfig).string();
  const std::string model = (dir_ / "m.gguf").string();
  Outcome r =
      Jisu({"make-model", "--config", config, "--type", "q8_0", "--seed", "5", "-o", model});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote"), std::string::npos);

  r = Jisu({"generate", "-m", model, "-p", "hello there", "-n", "6", "--ignore-eos", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json gen = json::parse(r.out);
  EXPECT_EQ(gen["output_ids"].size(), 6u) << r.out;

  r = Jisu({"bench", "-m", model, "-p", "16", "-n", "4", "-r", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json bench = json::parse(r.out);
  EXPECT_GT(bench["pp_tokens_per_s"].get<double>(), 0.0);
  EXPECT_EQ(bench["weight_type"], "q8_0");

  const std::string text = Write("text.txt", std::string(2000, 'a') + " the end.").string();
  r = Jisu({"perplexity", "-m", model, "-f", text, "--ctx", "64", "--chunks", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double ppl = json::parse(r.out)["ppl"].get<double>();
  EXPECT_TRUE(std::isfinite(ppl) && ppl > 1.0) << ppl;

  r = Jisu({"info", "--system", "--no-membw", "-m", model});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("matmul isa: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("q4_0 "), std::string::npos) << r.out;  // kernel table row
  EXPECT_NE(r.out.find("vocab 1000, hidden 64, 2 layers"), std::string::npos) << r.out;
}

TEST_F(MakeModelCliTest, MembwPrintsFigures) {
  Outcome r = Jisu({"info", "--membw", "--membw-mib", "64", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GB/s at 1 thread"), std::string::npos) << r.out;
  ExpectCleanError(Jisu({"info", "--membw", "--membw-mib", "1"}), "--membw-mib");
}

TEST_F(MakeModelCliTest, BadArgumentsFailCleanly) {
  const std::string out = (dir_ / "x.gguf").string();
  ExpectCleanError(Jisu({"make-model", "-o", out}), "exactly one of --shape");
  ExpectCleanError(Jisu({"make-model", "--shape", "tinyllama-1.1b"}), "-o OUT.gguf");
  ExpectCleanError(Jisu({"make-model", "--shape", "llama-9", "-o", out}), "unknown model shape");
  ExpectCleanError(Jisu({"make-model", "--shape", "tinyllama-1.1b", "--type", "q3", "-o", out}),
                   "--type must be");
  ExpectCleanError(
      Jisu({"make-model", "--shape", "tinyllama-1.1b", "--config", "c.json", "-o", out}),
      "exactly one of");
  const std::string bad = Write("bad.json", "{not json").string();
  ExpectCleanError(Jisu({"make-model", "--config", bad, "-o", out}), "bad.json: not valid JSON");
  const std::string list = Write("list.json", "[1, 2]").string();
  ExpectCleanError(Jisu({"make-model", "--config", list, "-o", out}), "not a JSON object");
  const std::string missing = Write("missing.json", R"({"architectures": ["LlamaForCausalLM"]})");
  ExpectCleanError(Jisu({"make-model", "--config", missing, "-o", out}), "vocab_size");
  const std::string cfg = Write("c.json", kSmallConfig).string();
  ExpectCleanError(Jisu({"make-model", "--config", cfg, "-o", "/nonexistent-dir/x.gguf"}),
                   "/nonexistent-dir/x.gguf");
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace jisu
