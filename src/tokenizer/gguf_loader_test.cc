// FromGguf on the SmolLM2 GGUF's real tokenizer metadata ("gpt2", pre "smollm", 49152 tokens),
// a synthetic "gpt2" / "llama-bpe" one and a synthetic "llama" one whose merges must be
// derived from scores. Ids: the family's tokenizer.json pipeline on each vocabulary
// (tools/make_real_vocab_fixtures.py); bos/eos/special ids: transformers' GGUF loader.
// Fixtures: tools/make_tokenizer_fixtures.py.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace jisu {
namespace {

using nlohmann::json;
using tokenizer_test::FixtureDir;
using tokenizer_test::ReadFile;

std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[++i];
      out += c == 'n' ? '\n' : c == 'r' ? '\r' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Reads the text dump written by write_gguf_metadata().
bool ReadMetadata(const std::string& path, GgufTokenizerData* d) {
  std::string text;
  if (!ReadFile(path, &text)) return false;
  std::istringstream in(text);
  std::string line;
  std::vector<std::pair<int, int>> odd_types;
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp), value = line.substr(sp + 1);
    if (key == "model") {
      d->model = value;
    } else if (key == "pre") {
      d->pre = value;
    } else if (key == "bos") {
      d->bos_id = std::stoi(value);
    } else if (key == "eos") {
      d->eos_id = std::stoi(value);
    } else if (key == "unk") {
      d->unk_id = std::stoi(value);
    } else if (key == "pad") {
      d->pad_id = std::stoi(value);
    } else if (key == "eot") {
      d->eot_id = std::stoi(value);
    } else if (key == "add_bos_token") {
      d->add_bos = value == "1";
    } else if (key == "add_eos_token") {
      d->add_eos = value == "1";
    } else if (key == "add_space_prefix") {
      d->add_space_prefix = value == "1";
    } else if (key == "token_types_not_normal") {
      for (int n = std::stoi(value); n > 0 && std::getline(in, line); --n) {
        const size_t s2 = line.find(' ');
        odd_types.emplace_back(std::stoi(line.substr(0, s2)), std::stoi(line.substr(s2 + 1)));
      }
    } else if (key == "tokens" || key == "merges" || key == "scores") {
      for (int n = std::stoi(value); n > 0 && std::getline(in, line); --n) {
        if (key == "tokens") d->tokens.push_back(Unescape(line));
        if (key == "merges") d->merges.push_back(Unescape(line));
        if (key == "scores") d->scores.push_back(std::stof(line));
      }
    }
  }
  d->token_types.assign(d->tokens.size(), 1);
  for (auto [i, t] : odd_types) d->token_types.at(i) = t;
  return true;
}

std::string Stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip) {
  StreamDecoder dec(tok, skip);
  std::string out;
  for (int32_t id : ids) out += dec.Push(id);
  return out + dec.Flush();
}

class GgufFixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufFixtureTest, MatchesFamilyPipeline) {
  const std::string dir = FixtureDir() + "/" + GetParam();
  GgufTokenizerData data;
  ASSERT_TRUE(ReadMetadata(dir + "/tokenizer_metadata.txt", &data));
  std::string expected_text;
  ASSERT_TRUE(ReadFile(dir + "/expected.json", &expected_text));
  const json expected = json::parse(expected_text);
  auto tok = Tokenizer::FromGguf(data);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const json& cases = expected["cases"];
  ASSERT_GT(cases.size(), 20u);
  for (const json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const std::string where = GetParam() + " text=" + json(text).dump();
    const auto ids_special = c["ids_special"].get<std::vector<int32_t>>();
    EXPECT_EQ((*tok)->Encode(text, false), c["ids"].get<std::vector<int32_t>>()) << where;
    EXPECT_EQ((*tok)->Encode(text, true), ids_special) << where;
    EXPECT_EQ((*tok)->Decode(ids_special, false), c["decoded"].get<std::string>()) << where;
    EXPECT_EQ((*tok)->Decode(ids_special, true), c["decoded_skip"].get<std::string>()) << where;
    EXPECT_EQ(Stream(**tok, ids_special, true), c["decoded_skip"].get<std::string>()) << where;
  }
  const json& s = expected["transformers_summary"];
  EXPECT_EQ((*tok)->bos_id(), s["bos_id"].get<int32_t>());
  EXPECT_EQ((*tok)->eos_id(), s["eos_id"].get<int32_t>());
  for (const json& id : s["special_ids"]) EXPECT_TRUE((*tok)->IsSpecial(id.get<int32_t>()));
  if (data.eot_id) {
    const auto stops = (*tok)->stop_ids();
    EXPECT_NE(std::find(stops.begin(), stops.end(), *data.eot_id), stops.end());
  }
}

INSTANTIATE_TEST_SUITE_P(Files, GgufFixtureTest,
                         ::testing::Values("gguf_smollm2", "gguf_llama3_bpe", "gguf_llama_scores"));

GgufTokenizerData TinySentencePiece() {
  GgufTokenizerData d;
  d.model = "llama";
  d.tokens = {"<unk>", "<s>", "</s>"};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    d.tokens.push_back(name);
  }
  for (const char* t : {"\xE2\x96\x81", "h", "i", "\xE2\x96\x81h", "\xE2\x96\x81hi", "hi"}) {
    d.tokens.push_back(t);
  }
  d.token_types.assign(d.tokens.size(), 1);
  d.token_types[0] = 2;
  d.token_types[1] = d.token_types[2] = 3;
  for (int b = 0; b < 256; ++b) d.token_types[3 + b] = 6;
  d.scores.assign(d.tokens.size(), 0.0f);
  d.scores[259 + 3] = -1.0f;  // "▁h"
  d.scores[259 + 4] = -2.0f;  // "▁hi"
  d.scores[259 + 5] = -3.0f;  // "hi"
  d.bos_id = 1;
  d.eos_id = 2;
  d.unk_id = 0;
  return d;
}

TEST(GgufTokenizerTest, SentencePieceByScoresWithByteFallback) {
  auto tok = Tokenizer::FromGguf(TinySentencePiece());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // "hi" -> "▁hi" (▁h merges first, then ▁h+i); BOS added by default for "llama".
  EXPECT_EQ((*tok)->Encode("hi", true), (std::vector<int32_t>{1, 263}));
  // "é" is not in the vocabulary: its two UTF-8 bytes become <0xC3> <0xA9>.
  EXPECT_EQ((*tok)->Encode("\xC3\xA9", false), (std::vector<int32_t>{259, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ((*tok)->Decode((*tok)->Encode("hi \xC3\xA9h", true), true), "hi \xC3\xA9h");
  EXPECT_EQ((*tok)->Encode("</s>", false), (std::vector<int32_t>{2}));
  EXPECT_TRUE((*tok)->IsSpecial(2));
  EXPECT_FALSE((*tok)->IsSpecial(263));
}

TEST(GgufTokenizerTest, RejectsBadMetadata) {
  GgufTokenizerData d = TinySentencePiece();
  d.bos_id = 100000;
  EXPECT_FALSE(Tokenizer::FromGguf(d).ok());
  d = TinySentencePiece();
  d.token_types.pop_back();
  EXPECT_FALSE(Tokenizer::FromGguf(d).ok());
  d = TinySentencePiece();
  d.model = "bert";
  EXPECT_EQ(Tokenizer::FromGguf(d).status().code(), Status::Code::kUnsupported);
  d = TinySentencePiece();
  d.merges = {"\xE2\x96\x81h nope"};
  EXPECT_FALSE(Tokenizer::FromGguf(d).ok());
  d = TinySentencePiece();
  d.merges = {"nospace"};
  EXPECT_FALSE(Tokenizer::FromGguf(d).ok());
  EXPECT_FALSE(Tokenizer::FromGguf(GgufTokenizerData{}).ok());
}

}  // namespace
}  // namespace jisu
