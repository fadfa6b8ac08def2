#include "format/gguf_writer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "format/format_test_util.h"
#include "format/gguf_test_util.h"

namespace jisu {
namespace {

using testing_util::FormatData;
using testing_util::HexToBytes;
using testing_util::ReadBytes;
using testing_util::ReadJson;

// Rebuilds small.gguf's content (as Python read it) with our writer.
GgufWriter WriterForFixture(const nlohmann::json& want) {
  GgufWriter w;
  for (const auto& m : want["metadata"]) w.AddValue(m["key"], testing_util::EntryValue(m));
  for (const auto& t : want["tensors"]) {
    w.AddTensor(t["name"], *DTypeFromName(t["dtype"].get<std::string>()),
                t["shape"].get<std::vector<int64_t>>(), HexToBytes(t["hex"]));
  }
  return w;
}

// Same content, same layout as the Python gguf writer: byte-identical output.
TEST(GgufWriterTest, ReproducesPythonFileByteForByte) {
  const nlohmann::json want = ReadJson(FormatData("small.gguf.json"));
  auto bytes = WriterForFixture(want).Serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const auto python = ReadBytes(FormatData("small.gguf"));
  EXPECT_EQ(bytes->size(), python.size());
  EXPECT_TRUE(*bytes == python);
}

TEST(GgufWriterTest, RoundTripsThroughReader) {
  const nlohmann::json want = ReadJson(FormatData("small.gguf.json"));
  const std::string dir = testing_util::MakeTempDir("writer");
  const std::string path = dir + "/out.gguf";
  ASSERT_TRUE(WriterForFixture(want).Write(path).ok());
  // Only the final file is left (the temporary was renamed).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const GgufFile& f = **file;
  testing_util::ExpectGgufMatchesJson(f, want, f.tensors()[0].data - f.tensors()[0].offset);
  // Keep a copy for a manual check with Python when asked to:
  //   JISU_KEEP_DIR=/tmp ./jisu_tests --gtest_filter=GgufWriterTest.*
  //   python tools/make_format_fixtures.py --check-gguf /tmp/jisu_small_roundtrip.gguf
  if (const char* keep = std::getenv("JISU_KEEP_DIR")) {
    std::filesystem::copy_file(path, std::string(keep) + "/jisu_small_roundtrip.gguf",
                               std::filesystem::copy_options::overwrite_existing);
  }
}

TEST(GgufWriterTest, TypedAddersAndReplacement) {
  GgufWriter w;
  w.AddString("general.architecture", "qwen2");
  w.AddU32("n", 7);
  w.AddI32("neg", -7);
  w.AddU64("big", uint64_t{1} << 40);
  w.AddF32("eps", 1e-6f);
  w.AddBool("flag", true);
  w.AddStringArray("toks", {"a", "", "\xe2\x9c\x93"});
  w.AddI32Array("ids", {1, -1});
  w.AddF32Array("scores", {0.25f, -3.0f});
  w.AddStringArray("empty", {});
  w.AddU32("n", 9);  // replaces, keeps position
  w.AddU32("general.alignment", 64);
  std::vector<uint8_t> f16(2 * 3 * 2, 0x3c);
  w.AddTensor("t", DType::kF16, {2, 3}, f16);
  w.AddTensor("q", DType::kQ4_0, {1, 64}, std::vector<uint8_t>(36, 0x11));
  auto bytes = w.Serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto f = GgufFile::Parse(bytes->data(), bytes->size());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 64u);
  EXPECT_EQ(g.metadata().size(), 11u);
  EXPECT_EQ(*g.GetString("general.architecture"), "qwen2");
  EXPECT_EQ(*g.GetInt("n"), 9);
  EXPECT_EQ(g.Find("n")->type, GgufType::kU32);
  EXPECT_EQ(*g.GetInt("neg"), -7);
  EXPECT_EQ(*g.GetInt("big"), int64_t{1} << 40);
  EXPECT_EQ(*g.GetFloat("eps"), static_cast<double>(1e-6f));
  EXPECT_TRUE(*g.GetBool("flag"));
  EXPECT_EQ(*g.GetStringArray("toks"), (std::vector<std::string>{"a", "", "\xe2\x9c\x93"}));
  EXPECT_EQ(*g.GetIntArray("ids"), (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(*g.GetFloatArray("scores"), (std::vector<float>{0.25f, -3.0f}));
  EXPECT_TRUE(g.GetStringArray("empty")->empty());
  ASSERT_EQ(g.tensors().size(), 2u);
  EXPECT_EQ(g.tensors()[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(g.tensors()[1].offset % 64, 0u);
  EXPECT_EQ(g.tensors()[1].num_bytes, 36u);
  EXPECT_EQ(g.tensors()[1].data[35], 0x11);
  EXPECT_EQ(bytes->size() % 64, 0u);
  if (const char* keep = std::getenv("JISU_KEEP_DIR")) {
    testing_util::WriteBytes(std::string(keep) + "/jisu_typed.gguf", *bytes);
  }
}

TEST(GgufWriterTest, VocabOnlyFile) {
  GgufWriter w;
  w.AddStringArray("tokenizer.ggml.tokens", {"x"});
  auto bytes = w.Serialize();
  ASSERT_TRUE(bytes.ok());
  auto f = GgufFile::Parse(bytes->data(), bytes->size());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE((*f)->tensors().empty());
}

void ExpectInvalid(const GgufWriter& w, const std::string& needle) {
  auto bytes = w.Serialize();
  ASSERT_FALSE(bytes.ok()) << needle;
  EXPECT_EQ(bytes.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(bytes.status().message().find(needle), std::string::npos) << bytes.status().ToString();
}

TEST(GgufWriterTest, RejectsInvalidContent) {
  {
    GgufWriter w;
    w.AddTensor("t", DType::kF32, {2, 2}, std::vector<uint8_t>(15));
    ExpectInvalid(w, "'t': data has 15 bytes");
  }
  {
    GgufWriter w;
    w.AddTensor("t", DType::kQ8_0, {2, 16}, std::vector<uint8_t>(34));
    ExpectInvalid(w, "'t': innermost dimension 16");
  }
  {
    GgufWriter w;
    w.AddTensor("t", DType::kF32, {0, 2}, {});
    ExpectInvalid(w, "positive");
  }
  {
    GgufWriter w;
    w.AddTensor("t", DType::kF32, {1, 1, 1, 1, 1}, std::vector<uint8_t>(4));
    ExpectInvalid(w, "4 dimensions");
  }
  {
    GgufWriter w;
    w.AddTensor("t", DType::kF32, {1}, std::vector<uint8_t>(4));
    w.AddTensor("t", DType::kF32, {1}, std::vector<uint8_t>(4));
    ExpectInvalid(w, "duplicate");
  }
  {
    GgufWriter w;
    w.AddU32("general.alignment", 24);
    ExpectInvalid(w, "general.alignment");
  }
  {
    GgufWriter w;
    GgufValue v;
    v.type = GgufType::kArray;
    v.array_type = GgufType::kI32;
    v.array.resize(1);  // element type u8, not i32
    w.AddValue("mixed", v);
    ExpectInvalid(w, "'mixed': array element 0");
  }
  {
    GgufWriter w;
    w.AddString("bad\xff", "x");
    ExpectInvalid(w, "UTF-8");
  }
  {
    GgufWriter w;
    w.AddU32("x", 1);
    EXPECT_FALSE(w.Write("/nonexistent_dir_jisu/x.gguf").ok());
  }
}

}  // namespace
}  // namespace jisu
