// Every fixture case produced by tools/make_tokenizer_fixtures.py (real `tokenizers` and
// `transformers` outputs for tiny tokenizers in each family's real configuration) must match
// exactly: ids with and without special tokens, decoded text with and without special tokens,
// and streamed decoding equal to full decoding.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace jisu {
namespace {

using nlohmann::json;
using tokenizer_test::FixtureDir;
using tokenizer_test::ReadFile;

std::string Stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
  StreamDecoder dec(tok, skip_special);
  std::string out;
  for (int32_t id : ids) out += dec.Push(id);
  out += dec.Flush();
  return out;
}

void CheckCases(const Tokenizer& tok, const json& cases, const std::string& label) {
  ASSERT_TRUE(cases.is_array());
  ASSERT_GT(cases.size(), 20u);
  for (const json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    const auto ids_special = c["ids_special"].get<std::vector<int32_t>>();
    const std::string decoded = c["decoded"].get<std::string>();
    const std::string decoded_skip = c["decoded_skip"].get<std::string>();
    const std::string where = label + " text=" + json(text).dump();
    EXPECT_EQ(tok.Encode(text, false), ids) << where;
    EXPECT_EQ(tok.Encode(text, true), ids_special) << where;
    EXPECT_EQ(tok.Decode(ids_special, false), decoded) << where;
    EXPECT_EQ(tok.Decode(ids_special, true), decoded_skip) << where;
    EXPECT_EQ(Stream(tok, ids_special, false), decoded) << where << " (stream)";
    EXPECT_EQ(Stream(tok, ids_special, true), decoded_skip) << where << " (stream, skip)";
  }
}

class TokenizerFixtureTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string dir = FixtureDir() + "/" + GetParam();
    std::string expected;
    ASSERT_TRUE(ReadFile(dir + "/tokenizer.json", &tokenizer_json_));
    ASSERT_TRUE(ReadFile(dir + "/tokenizer_config.json", &config_json_));
    ASSERT_TRUE(ReadFile(dir + "/expected.json", &expected));
    expected_ = json::parse(expected);
  }
  std::string tokenizer_json_, config_json_;
  json expected_;
};

TEST_P(TokenizerFixtureTest, MatchesTransformers) {
  auto tok = Tokenizer::FromHuggingFace(tokenizer_json_, config_json_);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  CheckCases(**tok, expected_["transformers"], GetParam() + "/transformers");
}

TEST_P(TokenizerFixtureTest, MatchesTokenizersLibraryWithoutConfig) {
  auto tok = Tokenizer::FromHuggingFace(tokenizer_json_, "");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  CheckCases(**tok, expected_["tokenizers"], GetParam() + "/tokenizers");
}

TEST_P(TokenizerFixtureTest, SpecialTokensMatchTransformers) {
  auto tok = Tokenizer::FromHuggingFace(tokenizer_json_, config_json_);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const json& s = expected_["transformers_summary"];
  if (s["bos_id"].is_null()) {
    EXPECT_FALSE((*tok)->bos_id().has_value());
  } else {
    EXPECT_EQ((*tok)->bos_id(), s["bos_id"].get<int32_t>());
  }
  if (s["eos_id"].is_null()) {
    EXPECT_FALSE((*tok)->eos_id().has_value());
  } else {
    EXPECT_EQ((*tok)->eos_id(), s["eos_id"].get<int32_t>());
    const auto stops = (*tok)->stop_ids();
    EXPECT_NE(std::find(stops.begin(), stops.end(), s["eos_id"].get<int32_t>()), stops.end());
  }
  EXPECT_EQ((*tok)->vocab_size(), s["vocab_size"].get<int32_t>());
  for (const json& id : s["special_ids"]) {
    EXPECT_TRUE((*tok)->IsSpecial(id.get<int32_t>())) << id;
  }
  // Every token maps back to its id.
  for (int32_t id = 0; id < (*tok)->vocab_size(); ++id) {
    const std::string t = (*tok)->IdToToken(id);
    if (t.empty()) continue;
    EXPECT_EQ((*tok)->TokenToId(t), id) << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, TokenizerFixtureTest,
                         ::testing::Values("gpt2", "llama3", "qwen2", "smollm2", "llama2",
                                           "mistral", "metaspace"));

}  // namespace
}  // namespace jisu
