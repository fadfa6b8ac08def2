// Every pre-tokenizer type GGUF files name, through both loaders: a small vocabulary per
// family in its real tokenizer.json configuration, and the same vocabulary as a
// vocabulary-only GGUF (tests/data/tokenizer/pretok/<family>/, from
// tools/make_pretok_fixtures.py; ids from the `tokenizers` library, SentencePiece's own encoder
// agreeing on the SentencePiece families).
//
// llama.cpp's tokenizer test files are checked too: the ggml-vocab-*.gguf real vocabularies
// and their .inp/.out cases, whose ids come from transformers on the real repositories
// (tools/fetch_vocab_tests.py puts them in .venv/share/jisu/llama_cpp_vocab, which
// scripts/setup.sh runs; JISU_LLAMA_CPP_VOCAB_DIR names another folder).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "model/model.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace jisu {
namespace {

using nlohmann::json;
using tokenizer_test::FixtureDir;
using tokenizer_test::ReadFile;

Result<std::unique_ptr<Tokenizer>> LoadGguf(const std::string& path) {
  JISU_ASSIGN_OR_RETURN(auto file, GgufFile::Open(path));
  JISU_ASSIGN_OR_RETURN(GgufTokenizerData data, ReadGgufTokenizerData(*file));
  return Tokenizer::FromGguf(data);
}

std::string Stream(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  StreamDecoder dec(tok, /*skip_special=*/false);
  std::string out;
  for (int32_t id : ids) out += dec.Push(id);
  return out + dec.Flush();
}

// Returns the number of cases that differ in their ids.
int CheckCases(const Tokenizer& tok, const json& cases, bool check_special,
               const std::string& label) {
  int bad = 0;
  for (const json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    const std::string where = label + " text=" + json(text).dump();
    const std::vector<int32_t> got = tok.Encode(text, false);
    EXPECT_EQ(got, ids) << where;
    bad += got != ids;
    if (check_special) {
      EXPECT_EQ(tok.Encode(text, true), c["ids_special"].get<std::vector<int32_t>>()) << where;
    }
    const std::string decoded = c["decoded"].get<std::string>();
    EXPECT_EQ(tok.Decode(ids, false), decoded) << where;
    EXPECT_EQ(Stream(tok, ids), decoded) << where << " (stream)";
  }
  return bad;
}

class PretokFamilyTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = FixtureDir() + "/pretok/" + GetParam();
    std::string text;
    ASSERT_TRUE(ReadFile(dir_ + "/expected.json", &text)) << dir_;
    expected_ = json::parse(text);
    ASSERT_GE(expected_["json"].size(), 80u);
  }
  std::string dir_;
  json expected_;
};

TEST_P(PretokFamilyTest, TokenizerJsonMatchesTokenizers) {
  std::string tokenizer_json;
  ASSERT_TRUE(ReadFile(dir_ + "/tokenizer.json", &tokenizer_json));
  auto tok = Tokenizer::FromHuggingFace(tokenizer_json, "");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(CheckCases(**tok, expected_["json"], true, GetParam() + "/json"), 0);
}

TEST_P(PretokFamilyTest, TokenizerJsonWithConfigMatchesTransformers) {
  std::string tokenizer_json, config;
  ASSERT_TRUE(ReadFile(dir_ + "/tokenizer.json", &tokenizer_json));
  ASSERT_TRUE(ReadFile(dir_ + "/tokenizer_config.json", &config));
  auto tok = Tokenizer::FromHuggingFace(tokenizer_json, config);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(CheckCases(**tok, expected_["transformers"], true, GetParam() + "/transformers"), 0);
}

TEST_P(PretokFamilyTest, VocabularyOnlyGgufMatchesItsTokenizerJson) {
  auto tok = LoadGguf(dir_ + "/vocab.gguf");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(CheckCases(**tok, expected_["gguf"], false, GetParam() + "/gguf"), 0);
  // BOS is added as the file's add_bos_token says (SentencePiece files set it).
  const std::vector<int32_t> plain = (*tok)->Encode("Hello", false);
  std::vector<int32_t> special = (*tok)->Encode("Hello", true);
  if (special.size() > plain.size()) {
    ASSERT_TRUE((*tok)->bos_id().has_value());
    EXPECT_EQ(special.front(), *(*tok)->bos_id());
    special.erase(special.begin());
  }
  EXPECT_EQ(special, plain);
}

INSTANTIATE_TEST_SUITE_P(Families, PretokFamilyTest,
                         ::testing::Values("gpt-2", "llama-bpe", "qwen2", "falcon", "mpt",
                                           "starcoder", "refact", "smollm", "command-r",
                                           "deepseek-llm", "deepseek-coder", "deepseek-v3",
                                           "llama-spm", "phi-3", "gemma"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

std::vector<std::string> PreTokenize(const json& j, const std::string& text) {
  auto pre = PreTokenizer::FromJson(j);
  EXPECT_TRUE(pre.ok()) << pre.status().ToString();
  std::vector<Piece> pieces{Piece{text, true}};
  pre->Apply(&pieces);
  std::vector<std::string> out;
  for (const Piece& p : pieces) out.push_back(p.text);
  return out;
}

TEST(PretokUnits, PunctuationTakesAsciiSymbolsAndUnicodePunctuation) {
  // tokenizers' is_punc: ASCII punctuation (with $+<=>^`|~) or a Unicode P category; "€" (Sc)
  // and "½" (No) are neither.
  const std::string text =
      "a+=b,,\xE2\x80\x94"
      "c\xC2\xBF\xE2\x82\xAC"
      "1\xC2\xBD";
  EXPECT_EQ(PreTokenize({{"type", "Punctuation"}, {"behavior", "Isolated"}}, text),
            (std::vector<std::string>{"a", "+", "=", "b", ",", ",", "\xE2\x80\x94", "c", "\xC2\xBF",
                                      "\xE2\x82\xAC"
                                      "1\xC2\xBD"}));
  EXPECT_EQ(PreTokenize({{"type", "Punctuation"}, {"behavior", "Contiguous"}}, text),
            (std::vector<std::string>{"a", "+=", "b", ",,\xE2\x80\x94", "c", "\xC2\xBF",
                                      "\xE2\x82\xAC"
                                      "1\xC2\xBD"}));
  EXPECT_EQ(PreTokenize({{"type", "Punctuation"}}, "x!!"),
            (std::vector<std::string>{"x", "!", "!"}));  // Isolated by default
}

TEST(PretokUnits, WhitespaceClassIsOniguruma) {
  // \s is Unicode White_Space, as in tokenizers: NEL yes, U+180E no, inside classes too.
  Regex::Span m;
  auto space = Regex::Compile("\\s").value();
  EXPECT_TRUE(space->Find("\xC2\x85", 0, &m));
  EXPECT_FALSE(space->Find("\xE1\xA0\x8E", 0, &m));
  auto not_space = Regex::Compile("[^\\s\\p{L}]+").value();
  EXPECT_TRUE(not_space->Find("\xE1\xA0\x8E", 0, &m));
  EXPECT_FALSE(not_space->Find("\xC2\x85 a", 0, &m));
  auto upper = Regex::Compile("\\S+").value();
  ASSERT_TRUE(upper->Find("\xE1\xA0\x8E \xC2\xA0", 0, &m));
  EXPECT_EQ(m, (Regex::Span{0, 3}));
  // Quoted text and a leading "]" in a class stay literal.
  auto quoted = Regex::Compile(Regex::Quote("\\s")).value();
  EXPECT_TRUE(quoted->Find("a\\sb", 0, &m));
  EXPECT_FALSE(quoted->Find(" ", 0, &m));
  auto bracket = Regex::Compile("[]\\s]+").value();
  ASSERT_TRUE(bracket->Find("x] \xC2\x85y", 0, &m));
  EXPECT_EQ(m, (Regex::Span{1, 5}));
  auto hyphen = Regex::Compile("[\\s-]+").value();
  ASSERT_TRUE(
      hyphen->Find("a- \xE2\x80\xA8"
                   "b",
                   0, &m));
  EXPECT_EQ(m, (Regex::Span{1, 6}));
  auto posix = Regex::Compile("[[:digit:]\\s]+").value();
  ASSERT_TRUE(posix->Find("a1 2b", 0, &m));
  EXPECT_EQ(m, (Regex::Span{1, 4}));
}

// Gemma 3 270M's real GGUF (262k tokens, Gemma's rules), which scripts/setup.sh installs from
// PyPI (testing::FindGemma3). Ids: transformers' GGUF loader
// (tools/make_real_vocab_fixtures.py), but for runs of more than 31 spaces, where jisu
// takes the longest space token first as SentencePiece and llama.cpp do.
TEST(PretokRealVocabularies, Gemma3Gguf) {
  const auto path = jisu::testing::FindGemma3();
  if (!path) GTEST_SKIP() << "no Gemma 3 270M GGUF (scripts/setup.sh installs it)";
  std::string text;
  ASSERT_TRUE(ReadFile(FixtureDir() + "/real_gemma3_expected.json", &text));
  const json expected = json::parse(text);
  auto tok = LoadGguf(*path);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const auto& apart = expected["longest_match_differs"];
  int checked = 0, bad = 0;
  for (const json& c : expected["cases"]) {
    if (std::find(apart.begin(), apart.end(), c["text"]) != apart.end()) continue;
    const auto want = c["ids"].get<std::vector<int32_t>>();
    const auto got = (*tok)->Encode(c["text"].get<std::string>(), false);
    EXPECT_EQ(got, want) << json(c["text"]).dump();
    bad += got != want;
    ++checked;
  }
  EXPECT_GT(checked, 80);
  std::printf("gemma 3: %d cases, %d differ\n", checked, bad);
}

// llama.cpp's test files: inputs separated by "\n__ggml_vocab_test__\n", one line of ids each.
TEST(PretokRealVocabularies, MatchLlamaCppTestFiles) {
  const char* env = std::getenv("JISU_LLAMA_CPP_VOCAB_DIR");
  const std::string dir =
      env != nullptr ? std::string(env)
                     : (jisu::testing::SourceDir() / ".venv/share/jisu/llama_cpp_vocab").string();
  if (!std::filesystem::is_directory(dir)) {
    GTEST_SKIP() << dir << " is missing (tools/fetch_vocab_tests.py)";
  }
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".gguf") continue;
    std::string inp, out;
    if (!ReadFile(path + ".inp", &inp) || !ReadFile(path + ".out", &out)) continue;
    auto tok = LoadGguf(path);
    if (!tok.ok() && tok.status().code() == Status::Code::kUnsupported) continue;  // bert, t5
    ASSERT_TRUE(tok.ok()) << path << ": " << tok.status().ToString();
    std::vector<std::string> texts;
    const std::string sep = "\n__ggml_vocab_test__\n";
    for (size_t pos = 0;;) {
      const size_t next = inp.find(sep, pos);
      if (next == std::string::npos) break;
      texts.push_back(inp.substr(pos, next - pos));
      pos = next + sep.size();
    }
    std::vector<std::vector<int32_t>> ids;
    for (size_t pos = 0; pos < out.size();) {
      size_t end = out.find('\n', pos);
      if (end == std::string::npos) end = out.size();
      std::vector<int32_t> line;
      for (size_t p = pos; p < end;) {
        while (p < end && out[p] == ' ') ++p;
        if (p >= end) break;
        line.push_back(std::stoi(out.substr(p, end - p)));
        while (p < end && out[p] != ' ') ++p;
      }
      ids.push_back(std::move(line));
      pos = end + 1;
    }
    ASSERT_GE(ids.size(), texts.size()) << path;
    int bad = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      const auto got = (*tok)->Encode(texts[i], false);
      EXPECT_EQ(got, ids[i]) << path << " text=" << json(texts[i]).dump();
      bad += got != ids[i];
    }
    std::printf("%s: %zu cases, %d differ\n", entry.path().filename().c_str(), texts.size(), bad);
    ++files;
  }
  EXPECT_GT(files, 0);
}

}  // namespace
}  // namespace jisu
