// Unit tests of the tokenizer's pieces: NFC against Python's unicodedata, UTF-8 replacement
// rules, streaming decode of split characters, round trips, thread safety, and rejection of
// malformed tokenizer.json / tokenizer_config.json with a Status.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "core/utf8.h"
#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_nfc.h"

namespace jisu {
namespace {

using nlohmann::json;
using tokenizer_test::FixtureDir;
using tokenizer_test::ReadFile;

std::unique_ptr<Tokenizer> LoadFamily(const std::string& family, bool with_config = true) {
  std::string tj, cj;
  EXPECT_TRUE(ReadFile(FixtureDir() + "/" + family + "/tokenizer.json", &tj));
  if (with_config) {
    EXPECT_TRUE(ReadFile(FixtureDir() + "/" + family + "/tokenizer_config.json", &cj));
  }
  auto tok = Tokenizer::FromHuggingFace(tj, cj);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

TEST(NfcTest, MatchesPythonUnicodedata) {
  std::string text;
  ASSERT_TRUE(ReadFile(FixtureDir() + "/nfc_cases.json", &text));
  const json cases = json::parse(text);
  ASSERT_GT(cases.size(), 300u);
  for (const json& c : cases) {
    EXPECT_EQ(NfcNormalize(c["text"].get<std::string>()), c["nfc"].get<std::string>())
        << json(c["text"]).dump();
  }
}

TEST(Utf8Test, SanitizeReplacesMaximalSubparts) {
  const std::string r(utf8::kReplacement);
  EXPECT_EQ(utf8::Sanitize("abc"), "abc");
  EXPECT_EQ(utf8::Sanitize("\xE2\x82"
                           "a"),
            r + "a");                                    // truncated 3-byte sequence
  EXPECT_EQ(utf8::Sanitize("\xF0\x80"), r + r);          // F0 80: bad second byte
  EXPECT_EQ(utf8::Sanitize("\xED\xA0\x80"), r + r + r);  // surrogate
  EXPECT_EQ(utf8::Sanitize("\xC0\xAF"), r + r);          // overlong
  EXPECT_EQ(utf8::Sanitize("\xFF"
                           "x\x80"),
            r + "x" + r);
  EXPECT_EQ(utf8::Sanitize("\xF0\x9F\x99\x82"), "\xF0\x9F\x99\x82");
  EXPECT_EQ(utf8::Sanitize("\xF0\x9F\x99"), r);
}

TEST(StreamDecoderTest, HoldsIncompleteCharactersAndReplacesInvalidOnes) {
  auto tok = LoadFamily("gpt2");
  ASSERT_NE(tok, nullptr);
  const std::string emoji = "\xF0\x9F\x99\x82";  // not in the tiny vocabulary as one token
  const auto ids = tok->Encode("a" + emoji + "b", false);
  ASSERT_GE(ids.size(), 4u);
  StreamDecoder dec(*tok);
  std::vector<std::string> deltas;
  for (int32_t id : ids) deltas.push_back(dec.Push(id));
  deltas.push_back(dec.Flush());
  std::string all;
  for (const auto& d : deltas) {
    EXPECT_TRUE(utf8::IsValid(d));
    all += d;
  }
  EXPECT_EQ(all, "a" + emoji + "b");
  EXPECT_EQ(deltas[0], "a");
  EXPECT_EQ(deltas[1], "");  // first byte of the emoji alone
  // A lone lead byte followed by an ASCII token: replaced, then the text continues.
  const auto lead = tok->TokenToId("\xC3\xB0");  // byte 0xF0 in GPT-2's alphabet ("ð")
  ASSERT_TRUE(lead.has_value());
  StreamDecoder dec2(*tok);
  EXPECT_EQ(dec2.Push(*lead), "");
  EXPECT_EQ(dec2.Push(tok->Encode("x", false)[0]), std::string(utf8::kReplacement) + "x");
  EXPECT_EQ(dec2.Push(*lead), "");
  EXPECT_EQ(dec2.Flush(), std::string(utf8::kReplacement));
}

TEST(StreamDecoderTest, SentencePieceDropsOnlyTheFirstLeadingSpace) {
  auto tok = LoadFamily("llama2");
  ASSERT_NE(tok, nullptr);
  const std::string text = "Hello  world \xE6\x97\xA5\xE6\x9C\xAC";
  const auto ids = tok->Encode(text, true);
  StreamDecoder dec(*tok, /*skip_special=*/true);
  std::string out;
  for (int32_t id : ids) out += dec.Push(id);
  out += dec.Flush();
  EXPECT_EQ(out, tok->Decode(ids, true));
  EXPECT_EQ(out, text);
}

TEST(TokenizerRoundTripTest, ByteLevelFamiliesAreLossless) {
  std::mt19937 rng(7);
  const std::vector<std::string> alphabet = {
      "a",        "Z", " ",  "  ",       "\n",           "\t",
      "'s",       "1", "23", "\xC3\xA9", "\xE6\x97\xA5", "\xF0\x9F\x99\x82",
      "\xCC\x81", "<", "|",  ">",        "\xE2\x80\x8B", "\r\n",
      "!?"};
  for (const char* family : {"gpt2", "llama3", "smollm2"}) {
    auto tok = LoadFamily(family);
    ASSERT_NE(tok, nullptr);
    for (int n = 0; n < 200; ++n) {
      std::string text;
      const int len = static_cast<int>(rng() % 30);
      for (int i = 0; i < len; ++i) text += alphabet[rng() % alphabet.size()];
      const auto ids = tok->Encode(text, false);
      EXPECT_EQ(tok->Decode(ids, false), text) << family << " " << json(text).dump();
      std::string concat;
      for (int32_t id : ids) concat += tok->TokenBytes(id);
      EXPECT_EQ(concat, text) << family;
    }
  }
}

TEST(TokenizerTest, InvalidUtf8InputIsReplacedNotRejected) {
  auto tok = LoadFamily("qwen2");
  ASSERT_NE(tok, nullptr);
  const auto ids = tok->Encode(
      "a\xFF"
      "b\xE2\x82",
      false);
  EXPECT_EQ(tok->Decode(ids, false),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
}

TEST(TokenizerTest, OutOfRangeIdsAreIgnored) {
  auto tok = LoadFamily("llama3");
  ASSERT_NE(tok, nullptr);
  const std::vector<int32_t> ids = {-5, 1 << 30, tok->vocab_size()};
  EXPECT_EQ(tok->Decode(ids, false), "");
  EXPECT_EQ(tok->TokenBytes(-1), "");
  EXPECT_EQ(tok->IdToToken(1 << 30), "");
  EXPECT_FALSE(tok->IsSpecial(-1));
  StreamDecoder dec(*tok);
  EXPECT_EQ(dec.Push(-1), "");
}

TEST(TokenizerTest, StopIdsIncludeEndOfTurnMarkers) {
  auto tok = LoadFamily("llama3");
  ASSERT_NE(tok, nullptr);
  const auto eot = tok->TokenToId("<|eot_id|>"), eom = tok->TokenToId("<|eom_id|>"),
             eos = tok->TokenToId("<|end_of_text|>");
  ASSERT_TRUE(eot && eom && eos);
  EXPECT_EQ(tok->eos_id(), eot);  // tokenizer_config.json's eos_token
  EXPECT_EQ(tok->stop_ids(), (std::vector<int32_t>{*eos, *eot, *eom}));
  const int32_t extra[] = {5};
  tok->AddStopIds(extra);
  EXPECT_EQ(tok->stop_ids().front(), 5);
}

TEST(TokenizerTest, ConcurrentEncodingIsConsistent) {
  auto tok = LoadFamily("qwen2");
  ASSERT_NE(tok, nullptr);
  const std::string text = "Concurrent encoding of caf\xC3\xA9 and \xE6\x97\xA5\xE6\x9C\xAC 12345 ";
  const auto expected = tok->Encode(text, false);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        if (tok->Encode(text + std::to_string(i % 7), false).size() < expected.size()) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// --- malformed input

json MinimalTokenizerJson() {
  return json::parse(R"({
    "version": "1.0", "added_tokens": [], "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "post_processor": null, "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})");
}

Status LoadStatus(const json& j, const std::string& config = "") {
  auto tok = Tokenizer::FromHuggingFace(j.dump(), config);
  return tok.ok() ? Status::Ok() : tok.status();
}

TEST(TokenizerMalformedTest, MinimalIsAccepted) {
  auto tok = Tokenizer::FromHuggingFace(MinimalTokenizerJson().dump(), "");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->Encode("ab", false), (std::vector<int32_t>{2}));
}

TEST(TokenizerMalformedTest, RejectsBrokenInputsWithStatus) {
  EXPECT_EQ(Tokenizer::FromHuggingFace("{not json", "").status().code(), Status::Code::kCorrupt);
  EXPECT_FALSE(Tokenizer::FromHuggingFace("[1,2]", "").ok());
  EXPECT_FALSE(Tokenizer::FromHuggingFace("", "").ok());
  EXPECT_FALSE(Tokenizer::FromHuggingFace(MinimalTokenizerJson().dump(), "{bad").ok());
  EXPECT_FALSE(Tokenizer::FromHuggingFace(std::string(200000, '['), "").ok());

  struct Case {
    const char* what;
    std::function<void(json&)> mutate;
  };
  const std::vector<Case> cases = {
      {"missing model", [](json& j) { j.erase("model"); }},
      {"model not object", [](json& j) { j["model"] = 3; }},
      {"unigram", [](json& j) { j["model"]["type"] = "Unigram"; }},
      {"vocab missing", [](json& j) { j["model"].erase("vocab"); }},
      {"vocab array", [](json& j) { j["model"]["vocab"] = json::array({"a"}); }},
      {"negative id", [](json& j) { j["model"]["vocab"]["c"] = -1; }},
      {"huge id", [](json& j) { j["model"]["vocab"]["c"] = int64_t{1} << 40; }},
      {"sparse id", [](json& j) { j["model"]["vocab"]["c"] = 5'000'000; }},
      {"float id", [](json& j) { j["model"]["vocab"]["c"] = 1.5; }},
      {"duplicate id", [](json& j) { j["model"]["vocab"]["c"] = 1; }},
      {"unknown merge token", [](json& j) { j["model"]["merges"].push_back("a zz"); }},
      {"merge result missing", [](json& j) { j["model"]["merges"].push_back("b a"); }},
      {"merge without space", [](json& j) { j["model"]["merges"].push_back("ab"); }},
      {"merge wrong shape", [](json& j) { j["model"]["merges"].push_back(json::array({"a"})); }},
      {"merges not array", [](json& j) { j["model"]["merges"] = "a b"; }},
      {"unk not in vocab", [](json& j) { j["model"]["unk_token"] = "<unk>"; }},
      {"bad regex",
       [](json& j) {
         j["pre_tokenizer"] = json::parse(
             R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated",
                 "invert": false})");
       }},
      {"bad behavior",
       [](json& j) {
         j["pre_tokenizer"] = json::parse(
             R"({"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways"})");
       }},
      {"unknown pre_tokenizer",
       [](json& j) {
         j["pre_tokenizer"] = {{"type", "Magic"}};
       }},
      {"unknown normalizer",
       [](json& j) {
         j["normalizer"] = {{"type", "NFKD"}};
       }},
      {"unknown decoder",
       [](json& j) {
         j["decoder"] = {{"type", "WordPiece"}};
       }},
      {"metaspace long replacement",
       [](json& j) {
         j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "ab"}};
       }},
      {"deep sequence",
       [](json& j) {
         json n = {{"type", "NFC"}};
         for (int i = 0; i < 40; ++i) n = {{"type", "Sequence"}, {"normalizers", {n}}};
         j["normalizer"] = n;
       }},
      {"added token negative id",
       [](json& j) {
         j["added_tokens"].push_back({{"id", -3}, {"content", "<x>"}});
       }},
      {"added token huge id",
       [](json& j) {
         j["added_tokens"].push_back({{"id", 1 << 30}, {"content", "<x>"}});
       }},
      {"added token far id",
       [](json& j) {
         j["added_tokens"].push_back({{"id", 9'000'000}, {"content", "<x>"}});
       }},
      {"added token empty",
       [](json& j) {
         j["added_tokens"].push_back({{"id", 3}, {"content", ""}});
       }},
      {"added token no id",
       [](json& j) {
         j["added_tokens"].push_back({{"content", "<x>"}});
       }},
      {"template unknown special",
       [](json& j) {
         j["post_processor"] = json::parse(
             R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}},
                 {"Sequence": {"id": "A"}}], "special_tokens": {}})");
       }},
      {"template id out of range",
       [](json& j) {
         j["post_processor"] = json::parse(
             R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}},
                 {"Sequence": {"id": "A"}}],
                 "special_tokens": {"<s>": {"id": "<s>", "ids": [99], "tokens": ["<s>"]}}})");
       }},
      {"type not string",
       [](json& j) {
         j["decoder"] = {{"type", 5}};
       }},
  };
  for (const Case& c : cases) {
    json j = MinimalTokenizerJson();
    c.mutate(j);
    const Status s = LoadStatus(j);
    EXPECT_FALSE(s.ok()) << c.what;
    EXPECT_FALSE(s.message().empty()) << c.what;
  }
  // Config problems.
  EXPECT_FALSE(LoadStatus(MinimalTokenizerJson(), R"({"bos_token": 5})").ok());
  EXPECT_FALSE(LoadStatus(MinimalTokenizerJson(), R"({"added_tokens_decoder": {"x": {}}})").ok());
  EXPECT_FALSE(LoadStatus(MinimalTokenizerJson(),
                          R"({"added_tokens_decoder": {"99999999999": {"content": "q"}}})")
                   .ok());
  EXPECT_TRUE(LoadStatus(MinimalTokenizerJson(), R"({"tokenizer_class": "GPT2Tokenizer"})").ok());
}

}  // namespace
}  // namespace jisu
