// `jisu convert` on a Hugging Face folder with a SentencePiece tokenizer (Llama 2 / Mistral v0.1
// style): the GGUF tokenizer metadata equals what llama.cpp's convert_hf_to_gguf.py writes for
// the same folder, and the converted file tokenizes as SentencePiece itself does (fixtures:
// tools/make_spm_convert_fixture.py). Also: the tokenizer.model reader refuses broken files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "convert/hf_to_gguf.h"
#include "format/gguf.h"
#include "model/model.h"
#include "tests/test_paths.h"
#include "tokenizer/spm_model.h"

namespace jisu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kDir = jisu::testing::TestDataPath("convert_spm");

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class SpmConvertTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    out_ = fs::temp_directory_path() / ("jisu_spm_convert_" + std::to_string(::getpid()) + ".gguf");
    ConvertOptions options;
    options.type = DType::kF32;
    status_ = ConvertHfToGguf(kDir + "/hf", out_.string(), options);
    expected_ = json::parse(Slurp(kDir + "/expected.json"));
  }
  static void TearDownTestSuite() { fs::remove(out_); }
  static inline fs::path out_;
  static inline Status status_;
  static inline json expected_;
};

TEST_F(SpmConvertTest, MetadataEqualsLlamaCppConverter) {
  ASSERT_TRUE(status_.ok()) << status_.ToString();
  auto f = GgufFile::Open(out_.string());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  const json& want = expected_["gguf"];
  ASSERT_GT(want.size(), 5u);
  for (const auto& [key, value] : want.items()) {
    SCOPED_TRACE(key);
    if (key == "tokenizer.ggml.add_sep_token") continue;  // llama.cpp's; no reader uses it
    const GgufValue* v = g.Find(key);
    ASSERT_NE(v, nullptr) << "missing";
    if (value.is_string()) {
      EXPECT_EQ(*g.GetString(key), value.get<std::string>());
    } else if (value.is_boolean()) {
      EXPECT_EQ(*g.GetBool(key), value.get<bool>());
    } else if (value.is_number_integer()) {
      EXPECT_EQ(*g.GetInt(key), value.get<int64_t>());
    } else if (key == "tokenizer.ggml.tokens") {
      EXPECT_EQ(*g.GetStringArray(key), value.get<std::vector<std::string>>());
    } else if (key == "tokenizer.ggml.scores") {
      EXPECT_EQ(*g.GetFloatArray(key), value.get<std::vector<float>>());
    } else if (key == "tokenizer.ggml.token_type") {
      EXPECT_EQ(*g.GetIntArray(key), value.get<std::vector<int64_t>>());
    } else {
      ADD_FAILURE() << "unchecked key";
    }
  }
}

TEST_F(SpmConvertTest, ConvertedFileTokenizesAsSentencePiece) {
  ASSERT_TRUE(status_.ok()) << status_.ToString();
  auto model = Model::Load(out_.string());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const Tokenizer& tok = (*model)->tokenizer();
  const auto& cases = expected_["ids"];
  ASSERT_GE(cases.size(), 10u);
  for (const json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    std::vector<int32_t> want = {1};  // add_bos_token
    for (const json& id : c["ids"]) want.push_back(id.get<int32_t>());
    EXPECT_EQ(tok.Encode(text, /*add_special=*/true), want) << "text: '" << text << "'";
  }
}

TEST(SpmModelTest, ReadsPiecesAndSettings) {
  auto m = ParseSpmModel(Slurp(kDir + "/hf/tokenizer.model"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->pieces.size(), 700u);
  EXPECT_EQ(m->model_type, SpmModel::kBpe);
  EXPECT_TRUE(m->byte_fallback);
  EXPECT_TRUE(m->add_dummy_prefix);
  EXPECT_FALSE(m->remove_extra_whitespaces);
  EXPECT_EQ(m->normalizer_name, "identity");
  EXPECT_EQ(m->pieces[0].text, "<unk>");
  EXPECT_EQ(m->pieces[0].type, SpmModel::kUnknown);
  EXPECT_EQ(m->pieces[1].type, SpmModel::kControl);
  EXPECT_EQ(m->pieces[3].text, "<0x00>");
  EXPECT_EQ(m->pieces[3].type, SpmModel::kByte);
  EXPECT_EQ(m->unk_id, 0);
  EXPECT_EQ(m->bos_id, 1);
  EXPECT_EQ(m->eos_id, 2);
  EXPECT_EQ(m->pad_id, -1);
}

TEST(SpmModelTest, RefusesBrokenFiles) {
  const std::string good = Slurp(kDir + "/hf/tokenizer.model");
  ASSERT_GT(good.size(), 100u);
  EXPECT_FALSE(ParseSpmModel("").ok());                          // no pieces
  EXPECT_FALSE(ParseSpmModel(std::string("\x0a\xff", 2)).ok());  // length past the end
  EXPECT_FALSE(ParseSpmModel(std::string(11, '\xff')).ok());     // varint too long
  EXPECT_FALSE(ParseSpmModel(std::string("\x0b", 1)).ok());      // group wire type
  // A piece of invalid UTF-8: field 1 { field 1: "\xff" }.
  EXPECT_FALSE(ParseSpmModel(std::string("\x0a\x03\x0a\x01\xff", 5)).ok());
  // A piece of unknown type 9.
  EXPECT_FALSE(ParseSpmModel(std::string("\x0a\x05\x0a\x01x\x18\x09", 7)).ok());
  // Every truncation of the real file fails cleanly or parses (never crashes).
  for (size_t n = 0; n < good.size(); n += 97) (void)ParseSpmModel(good.substr(0, n));
}

}  // namespace
}  // namespace jisu
