// The jisu executable end to end: real processes, real files, exit codes and outputs. Bad
// input of every kind must give exit code 1 and a one-line "jisu: error: ..." on stderr —
// never a crash (signal), a hang, or a partial result on stdout.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "convert/hf_to_gguf.h"
#include "format/gguf.h"
#include "format/gguf_writer.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

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

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("jisu_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Outcome Jisu(const std::vector<std::string>& args) {
    std::string cmd = std::string("timeout 300 ") + jisu::testing::JisuCommand();
    for (const auto& a : args) cmd += " " + Quote(a);
    cmd += " >" + Quote((dir_ / "out").string()) + " 2>" + Quote((dir_ / "err").string()) +
           " </dev/null";
    const int status = std::system(cmd.c_str());
    Outcome r;
    r.out = Slurp(dir_ / "out");
    r.err = Slurp(dir_ / "err");
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    // timeout(1) reports a child killed by a signal as 128 + signal.
    r.signaled = WIFSIGNALED(status) || r.exit_code >= 124;
    return r;
  }

  fs::path Write(const std::string& name, const std::string& bytes) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  // A copy of the tiny model folder whose files can be damaged.
  fs::path CopyTinyModel() {
    const fs::path dst = dir_ / "model";
    fs::copy(testing::SourceDir() / "models" / "tiny-llama", dst, fs::copy_options::recursive);
    return dst;
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

const std::string kTiny = (jisu::testing::SourceDir() / "models" / "tiny-llama").string();

TEST_F(CliTest, TokenizeJsonMatchesGoldenIds) {
  const json fixture = testing::ReadJson(testing::TestDataDir() / "golden" / "tiny-llama.json");
  ASSERT_FALSE(fixture.is_discarded());
  for (const json& c : fixture["tokenizer"]) {
    const std::string text = c["text"];
    if (text.empty()) continue;
    Outcome r = Jisu({"tokenize", "-m", kTiny, "-p", text, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out), c["ids"]) << text;
    r = Jisu({"tokenize", "-m", kTiny, "-p", text, "--json", "--no-bos"});
    EXPECT_EQ(json::parse(r.out), c["ids_no_special"]) << text;
  }
}

TEST_F(CliTest, GenerateJsonHasIdsTextAndTimings) {
  const json fixture = testing::ReadJson(testing::TestDataDir() / "golden" / "tiny-llama.json");
  const json& t = fixture["tokenizer"][0];
  Outcome r = Jisu({"generate", "-m", kTiny, "-p", t["text"], "--temperature", "0", "-n", "8",
                    "--ignore-eos", "--json", "-t", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["prompt_ids"], t["ids"]);
  EXPECT_EQ(out["output_ids"].size(), 8u);
  EXPECT_TRUE(out["text"].is_string());
  EXPECT_GT(out["timings"]["prompt_tokens_per_s"].get<double>(), 0);
  EXPECT_GT(out["timings"]["peak_rss_bytes"].get<double>(), 0);
  // Greedy is deterministic: the same command gives the same tokens.
  Outcome again = Jisu({"generate", "-m", kTiny, "-p", t["text"], "--temperature", "0", "-n", "8",
                        "--ignore-eos", "--json", "-t", "1"});
  EXPECT_EQ(json::parse(again.out)["output_ids"], out["output_ids"]);
}

TEST_F(CliTest, SameSeedSameOutputDifferentSeedDifferent) {
  auto gen = [&](const char* seed) {
    Outcome r = Jisu({"generate", "-m", kTiny, "-p", "def main():", "-n", "24", "--seed", seed,
                      "--temperature", "1.0", "--top-k", "0", "--top-p", "1", "--min-p", "0",
                      "--ignore-eos", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out)["output_ids"];
  };
  EXPECT_EQ(gen("7"), gen("7"));
  EXPECT_NE(gen("7"), gen("8"));
}

TEST_F(CliTest, ChatTemplateWithTemplateFile) {
  const fs::path tmpl =
      Write("t.jinja",
            "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}\n"
            "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}");
  const fs::path msgs = Write(
      "m.json", R"([{"role":"user","content":"  hi  "},{"role":"assistant","content":"yo"}])");
  Outcome r = Jisu({"chat-template", "--template", tmpl.string(), "--messages", msgs.string(),
                    "--add-generation-prompt", "--bos-token", "<s>"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<s><user>hi\n<assistant>yo\n<assistant>");
  r = Jisu({"chat-template", "--template", tmpl.string(), "--messages", msgs.string()});
  EXPECT_EQ(r.out, "<user>hi\n<assistant>yo\n");
}

// --chat-template replaces the model's own template; the model still gives the special tokens.
TEST_F(CliTest, ChatTemplateFlagOverridesTheModels) {
  const fs::path tmpl = Write("t.jinja",
                              "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{{ eos_token }}"
                              "{% endfor %}{% if add_generation_prompt %}[assistant:{% endif %}");
  const fs::path msgs = Write("m.json", R"([{"role":"user","content":"hi"}])");
  Outcome r = Jisu({"chat-template", "-m", kTiny, "--chat-template", tmpl.string(), "--messages",
                    msgs.string(), "--add-generation-prompt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[user:hi]<|im_end|>[assistant:");
  // generate --chat tokenizes that rendering (special tokens come from the template only).
  Outcome ids = Jisu({"tokenize", "-m", kTiny, "-p", r.out, "--json", "--no-bos"});
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  Outcome gen = Jisu({"generate", "-m", kTiny, "--chat", "--chat-template", tmpl.string(), "-p",
                      "hi", "-n", "1", "--temperature", "0", "--json"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  EXPECT_EQ(json::parse(gen.out)["prompt_ids"], json::parse(ids.out));
  Outcome own = Jisu({"generate", "-m", kTiny, "--chat", "-p", "hi", "-n", "1", "--json"});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_NE(json::parse(own.out)["prompt_ids"], json::parse(ids.out));
}

// An unreadable, empty or broken --chat-template fails before any model loads, naming the file;
// the server never starts listening.
TEST_F(CliTest, BadChatTemplateFileFailsCleanly) {
  const fs::path msgs = Write("m.json", R"([{"role":"user","content":"hi"}])");
  const std::string missing = (dir_ / "missing.jinja").string();
  const std::string empty = Write("empty.jinja", "").string();
  const std::string broken =
      Write("broken.jinja", "{% for m in messages %}{{ m.content }}").string();
  for (const std::string& file : {missing, empty, broken, dir_.string()}) {
    const std::string name = fs::path(file).filename().string();
    ExpectCleanError(Jisu({"chat-template", "--chat-template", file, "--messages", msgs.string()}),
                     name);
    ExpectCleanError(
        Jisu({"generate", "-m", kTiny, "--chat", "--chat-template", file, "-p", "hi", "-n", "1"}),
        "--chat-template");
    ExpectCleanError(Jisu({"serve", "-m", kTiny, "--port", "0", "--chat-template", file}),
                     "--chat-template");
  }
  ExpectCleanError(Jisu({"generate", "-m", kTiny, "--chat-template", broken, "-p", "hi"}),
                   "--chat");
}

// Gemma 3's real template (fetched from PyPI by setup.sh; its GGUF has none) through
// `jisu chat-template --chat-template`, byte for byte against what transformers rendered.
TEST_F(CliTest, ChatTemplateFlagRendersGemma3AsTransformers) {
  const auto tmpl = testing::FindExternalChatTemplate("gemma3.jinja");
  if (!tmpl) {
    if (testing::SetupDataRequired()) FAIL() << "gemma3.jinja was not fetched (scripts/setup.sh)";
    GTEST_SKIP() << "gemma3.jinja not fetched (tools/fetch_chat_templates.py)";
  }
  const json fixture =
      testing::ReadJson(testing::TestDataDir() / "chat" / "external" / "gemma3.json");
  ASSERT_FALSE(fixture.is_discarded());
  int rendered = 0, rejected = 0;
  for (const json& c : fixture["cases"]) {
    const std::string set = c["messages_file"];
    if (set != "basic" && set != "multi_turn" && set != "single_user" && set != "bad_alternation") {
      continue;
    }
    const fs::path msgs = Write(set + ".json", c["messages"].dump());
    std::vector<std::string> args = {"chat-template", "--chat-template", *tmpl,
                                     "--messages",    msgs.string(),     "--bos-token",
                                     c["bos_token"],  "--eos-token",     c["eos_token"]};
    if (c["add_generation_prompt"].get<bool>()) args.push_back("--add-generation-prompt");
    const Outcome r = Jisu(args);
    if (c.contains("error")) {
      ExpectCleanError(r, c["error"].get<std::string>());
      ++rejected;
      continue;
    }
    ASSERT_EQ(r.exit_code, 0) << set << ": " << r.err;
    EXPECT_EQ(r.out, c["output"].get<std::string>()) << set;
    ++rendered;
  }
  EXPECT_EQ(rendered, 6);
  EXPECT_EQ(rejected, 2);
}

TEST_F(CliTest, MissingAndCorruptModelFilesFailCleanly) {
  ExpectCleanError(Jisu({"generate", "-m", (dir_ / "nope.gguf").string(), "-p", "x"}), "no such");
  ExpectCleanError(Jisu({"generate", "-m", Write("empty.gguf", "").string(), "-p", "x"}), "gguf");
  ExpectCleanError(
      Jisu({"generate", "-m", Write("bad.gguf", "GGUF\x03\0\0\0garbage").string(), "-p", "x"}),
      "bad.gguf");
  ExpectCleanError(
      Jisu({"generate", "-m", Write("magic.gguf", std::string(64, 'x')).string(), "-p", "x"}),
      "magic.gguf");
}

TEST_F(CliTest, DamagedModelFolderFailsCleanly) {
  {
    const fs::path m = CopyTinyModel();
    Write("model/config.json", "{\"architectures\": [\"GPTNeoXForCausalLM\"]}");
    ExpectCleanError(Jisu({"generate", "-m", m.string(), "-p", "x"}), "GPTNeoXForCausalLM");
  }
  fs::remove_all(dir_ / "model");
  {
    const fs::path m = CopyTinyModel();
    Write("model/tokenizer.json", "{\"model\": ");
    ExpectCleanError(Jisu({"generate", "-m", m.string(), "-p", "x"}), "tokenizer");
  }
  fs::remove_all(dir_ / "model");
  {
    const fs::path m = CopyTinyModel();
    for (const auto& e : fs::directory_iterator(m)) {
      if (e.path().extension() == ".safetensors") {
        fs::resize_file(e.path(), fs::file_size(e.path()) / 2);  // truncated shard
      }
    }
    ExpectCleanError(Jisu({"generate", "-m", m.string(), "-p", "x"}), "safetensors");
  }
  fs::remove_all(dir_ / "model");
  {
    const fs::path m = CopyTinyModel();
    json cfg = testing::ReadJson(m / "config.json");
    cfg["num_hidden_layers"] = 1000000;
    Write("model/config.json", cfg.dump());
    ExpectCleanError(Jisu({"generate", "-m", m.string(), "-p", "x"}), "num_hidden_layers");
  }
  fs::remove_all(dir_ / "model");
  {
    const fs::path m = CopyTinyModel();
    json cfg = testing::ReadJson(m / "config.json");
    cfg["intermediate_size"] = cfg["intermediate_size"].get<int>() + 32;  // mis-shaped tensors
    Write("model/config.json", cfg.dump());
    ExpectCleanError(Jisu({"generate", "-m", m.string(), "-p", "x"}), "mlp.gate_proj");
  }
}

TEST_F(CliTest, PromptLongerThanContextFailsCleanly) {
  std::string prompt;
  for (int i = 0; i < 200; ++i) prompt += "word ";
  ExpectCleanError(Jisu({"generate", "-m", kTiny, "-p", prompt, "--ctx", "64"}), "context");
}

TEST_F(CliTest, BadFlagsFailCleanly) {
  Outcome r = Jisu({"generate", "-m", kTiny, "-p", "x", "--temperature", "-1"});
  ExpectCleanError(r, "temperature");
  r = Jisu({"generate", "-m", kTiny, "-p", "x", "-f", "also-a-file"});
  ExpectCleanError(r, "not both");
  r = Jisu({"convert", "-m", kTiny, "-o", (dir_ / "x.gguf").string(), "--type", "q3_z"});
  ExpectCleanError(r, "--type");
  r = Jisu({"bench-engine", "-m", kTiny, "--kv-memory", "12XB"});
  ExpectCleanError(r, "--kv-memory");
  r = Jisu({"bench-engine", "-m", kTiny, "-c", "1,0"});
  ExpectCleanError(r, "--concurrency");
  r = Jisu({"frobnicate"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(r.signaled);
}

// Every level counts exactly its own requests' tokens (the unreported warm-up round's are not
// among them), and the shared-prefix TTFT pair is reported.
TEST_F(CliTest, BenchEngineReportsEachLevel) {
  const Outcome r = Jisu({"bench-engine", "-m", kTiny, "-c", "1,3", "-p", "5", "-n", "4", "-t", "1",
                          "--shared-prefix", "32", "--kv-memory", "16MiB", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t json_line = r.out.find("\n{");  // the table, then one line of JSON
  ASSERT_NE(json_line, std::string::npos) << r.out;
  const json out = json::parse(r.out.substr(json_line + 1));
  ASSERT_EQ(out["throughput"].size(), 2u) << r.out;
  const int levels[] = {1, 3};
  for (int i = 0; i < 2; ++i) {
    const json& level = out["throughput"][i];
    EXPECT_EQ(level["concurrency"], levels[i]);
    EXPECT_EQ(level["output_tokens"], 4 * levels[i]);
    EXPECT_GT(level["output_tokens_per_s"].get<double>(), 0);
    EXPECT_GT(level["mean_ttft_s"].get<double>(), 0);
  }
  EXPECT_GT(out["ttft_shared_prefix"]["cold_s"].get<double>(), 0);
  EXPECT_GT(out["ttft_shared_prefix"]["warm_s"].get<double>(), 0);
}

TEST_F(CliTest, VocabOnlyGgufTokenizesButDoesNotGenerate) {
  const fs::path full = dir_ / "full.gguf";
  ASSERT_TRUE(ConvertHfToGguf(kTiny, full.string(), ConvertOptions{DType::kQ8_0}).ok());
  auto gguf = GgufFile::Open(full.string());
  ASSERT_TRUE(gguf.ok());
  GgufWriter writer;  // the same metadata, no tensors: what llama.cpp ships as ggml-vocab-*.gguf
  for (const auto& [key, value] : (*gguf)->metadata()) writer.AddValue(key, value);
  const fs::path vocab = dir_ / "vocab.gguf";
  ASSERT_TRUE(writer.Write(vocab.string()).ok());

  const json fixture = testing::ReadJson(testing::TestDataDir() / "golden" / "tiny-llama.json");
  for (const json& c : fixture["tokenizer"]) {
    const std::string text = c["text"];
    if (text.empty()) continue;
    Outcome r = Jisu({"tokenize", "-m", vocab.string(), "-p", text, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out), c["ids"]) << text;
  }
  ExpectCleanError(Jisu({"generate", "-m", vocab.string(), "-p", "x"}), "vocab-only");
}

TEST_F(CliTest, PerplexityRuns) {
  Outcome r = Jisu({"perplexity", "-m", kTiny, "-f",
                    (testing::TestDataDir() / "golden" / "heldout.txt").string(), "--ctx", "64",
                    "--chunks", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["num_scored"], 126);
  EXPECT_GT(out["ppl"].get<double>(), 1.0);
}

}  // namespace
}  // namespace jisu
