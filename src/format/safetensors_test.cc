#include "format/safetensors.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/half.h"
#include "format/format_test_util.h"

namespace jisu {
namespace {

namespace fs = std::filesystem;
using testing_util::FormatData;
using testing_util::ReadBytes;
using testing_util::ReadJson;
using testing_util::WriteBytes;

double ElementAt(const SafetensorsTensor& t, int64_t k) {
  const uint8_t* p = t.data;
  switch (t.dtype) {
    case DType::kF32: {
      float v;
      std::memcpy(&v, p + 4 * k, 4);
      return v;
    }
    case DType::kF64: {
      double v;
      std::memcpy(&v, p + 8 * k, 8);
      return v;
    }
    case DType::kF16:
    case DType::kBF16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * k, 2);
      return t.dtype == DType::kF16 ? F16ToF32(h) : Bf16ToF32(h);
    }
    case DType::kI8:
      return static_cast<int8_t>(p[k]);
    case DType::kI16: {
      int16_t v;
      std::memcpy(&v, p + 2 * k, 2);
      return v;
    }
    case DType::kI32: {
      int32_t v;
      std::memcpy(&v, p + 4 * k, 4);
      return v;
    }
    case DType::kI64: {
      int64_t v;
      std::memcpy(&v, p + 8 * k, 8);
      return static_cast<double>(v);
    }
    default:
      ADD_FAILURE() << "unexpected dtype";
      return 0;
  }
}

std::string SafetensorsName(DType d) {
  switch (d) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kF64:
      return "F64";
    case DType::kI8:
      return "I8";
    case DType::kI16:
      return "I16";
    case DType::kI32:
      return "I32";
    case DType::kI64:
      return "I64";
    default:
      return "?";
  }
}

void ExpectTensorMatches(const SafetensorsTensor& t, const nlohmann::json& w) {
  EXPECT_EQ(SafetensorsName(t.dtype), w["dtype"].get<std::string>()) << t.name;
  EXPECT_EQ(t.shape, w["shape"].get<std::vector<int64_t>>()) << t.name;
  const auto& values = w["values"];
  ASSERT_EQ(t.NumElements(), static_cast<int64_t>(values.size())) << t.name;
  EXPECT_EQ(t.num_bytes, values.size() * Traits(t.dtype).block_bytes) << t.name;
  for (size_t k = 0; k < values.size(); ++k) {
    EXPECT_EQ(ElementAt(t, static_cast<int64_t>(k)), values[k].get<double>()) << t.name << k;
  }
}

TEST(SafetensorsTest, ReadsPythonWrittenFixture) {
  const std::string path = FormatData("small.safetensors");
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const nlohmann::json want = ReadJson(path + ".json");
  const SafetensorsFile& f = **file;
  using StringMap = std::map<std::string, std::string>;
  EXPECT_EQ(f.metadata(), want["metadata"].get<StringMap>());
  ASSERT_EQ(f.tensors().size(), want["tensors"].size());
  const uint8_t* data_start = nullptr;
  for (const auto& w : want["tensors"]) {
    const SafetensorsTensor* t = f.Find(w["name"].get<std::string>());
    ASSERT_NE(t, nullptr) << w["name"];
    ExpectTensorMatches(*t, w);
    const uint64_t begin = w["data_offsets"][0];
    if (begin == 0) data_start = t->data;
  }
  ASSERT_NE(data_start, nullptr);
  for (const auto& w : want["tensors"]) {
    EXPECT_EQ(f.Find(w["name"].get<std::string>())->data,
              data_start + w["data_offsets"][0].get<uint64_t>());
  }
  // Exposed in file order.
  for (size_t k = 1; k < f.tensors().size(); ++k) {
    EXPECT_LE(f.tensors()[k - 1].data, f.tensors()[k].data);
  }
  EXPECT_EQ(f.Find("z.empty")->NumElements(), 0);
  EXPECT_EQ(f.Find("nope"), nullptr);
}

std::vector<uint8_t> MakeSafetensors(const std::string& header, size_t data_bytes) {
  testing_util::Bytes b;
  b.U64(header.size());
  b.Raw(std::vector<uint8_t>(header.begin(), header.end()));
  b.Zeros(data_bytes);
  return b.bytes();
}

Status ParseStatus(const std::vector<uint8_t>& bytes) {
  return SafetensorsFile::Parse(bytes.data(), bytes.size()).status();
}

void ExpectError(const std::string& header, size_t data_bytes, const std::string& needle,
                 Status::Code code = Status::Code::kCorrupt) {
  const Status st = ParseStatus(MakeSafetensors(header, data_bytes));
  ASSERT_FALSE(st.ok()) << header;
  EXPECT_EQ(st.code(), code) << st.ToString();
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.ToString();
}

TEST(SafetensorsCorruptTest, HandBuiltFiles) {
  // Valid: padding spaces after the JSON, zero-size tensor, empty header.
  EXPECT_TRUE(
      ParseStatus(MakeSafetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                  R"("e":{"dtype":"I64","shape":[0,5],"data_offsets":[8,8]}}    )",
                                  8))
          .ok());
  EXPECT_TRUE(ParseStatus(MakeSafetensors("{}", 0)).ok());
  EXPECT_TRUE(
      ParseStatus(MakeSafetensors(R"({"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}})", 8))
          .ok());

  ExpectError("[]", 0, "not a JSON object");
  ExpectError("{\"a\":", 0, "invalid JSON");
  ExpectError(R"({"a":1})", 0, "'a': entry is not an object");
  ExpectError(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4, "'a': missing");
  ExpectError(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 4, "'a': missing");
  ExpectError(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4, "data_offsets");
  for (const char* dt : {"F8_E4M3", "BOOL", "U8", "U16", "WHAT"}) {
    ExpectError(std::string(R"({"w8":{"dtype":")") + dt + R"(","shape":[1],"data_offsets":[0,1]}})",
                8, std::string("'w8': unsupported dtype '") + dt, Status::Code::kUnsupported);
  }
  ExpectError(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4, "non-negative");
  ExpectError(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4, "non-negative");
  ExpectError(R"({"a":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,4]}})", 4,
              "non-negative");
  ExpectError(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})", 4,
              "overflows");
  ExpectError(R"({"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,4]}})", 4,
              "does not match");
  ExpectError(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", 4, "extend past");
  ExpectError(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8, "begin <= end");
  ExpectError(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 8, "data_offsets");
  ExpectError(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, "does not match");
  ExpectError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
              12, "overlap");
  ExpectError(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
              R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
              8, "duplicate JSON key 'a'");
  ExpectError("{\"bad\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
              "invalid JSON");
  ExpectError(R"({"__metadata__":{"k":1}})", 0, "__metadata__");
  ExpectError(R"({"__metadata__":[]})", 0, "__metadata__");
  ExpectError(std::string(200, '[') + std::string(200, ']'), 0, "nested");
}

TEST(SafetensorsCorruptTest, HeaderLengthBounds) {
  testing_util::Bytes huge;
  huge.U64(uint64_t{1} << 40).Raw({'{', '}'});
  EXPECT_NE(ParseStatus(huge.bytes()).message().find("100 MB"), std::string::npos);
  testing_util::Bytes past;
  past.U64(100).Raw({'{', '}'});
  EXPECT_NE(ParseStatus(past.bytes()).message().find("exceeds the file size"), std::string::npos);
  EXPECT_FALSE(ParseStatus({1, 2, 3}).ok());
}

TEST(SafetensorsCorruptTest, EveryTruncationFails) {
  for (const std::string name : {"small.safetensors", "sharded/model-00001-of-00002.safetensors"}) {
    const auto bytes = ReadBytes(FormatData(name));
    ASSERT_TRUE(ParseStatus(bytes).ok());
    for (size_t n = 0; n < bytes.size(); ++n) {
      const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + n);
      const Status st = ParseStatus(prefix);
      EXPECT_FALSE(st.ok()) << name << " cut at " << n;
      EXPECT_EQ(st.code(), Status::Code::kCorrupt) << st.ToString();
    }
  }
}

TEST(SafetensorsCorruptTest, SingleByteCorruptionsNeverCrash) {
  const auto bytes = ReadBytes(FormatData("small.safetensors"));
  for (size_t pos = 0; pos < bytes.size(); ++pos) {
    for (uint8_t x : {0x01, 0x20, 0x80}) {
      std::vector<uint8_t> copy = bytes;
      copy[pos] ^= x;
      auto f = SafetensorsFile::Parse(copy.data(), copy.size());
      if (!f.ok()) continue;
      for (const auto& t : (*f)->tensors()) {
        ASSERT_GE(t.data, copy.data());
        ASSERT_LE(t.data + t.num_bytes, copy.data() + copy.size());
      }
    }
  }
}

// ---- Model folders -------------------------------------------------------------------------

TEST(SafetensorsModelTest, ReadsShardedFolder) {
  auto model = SafetensorsModel::OpenDir(FormatData("sharded"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const nlohmann::json want = ReadJson(FormatData("sharded.json"));
  std::vector<std::string> names;
  for (const auto& w : want["tensors"]) {
    names.push_back(w["name"]);
    const SafetensorsTensor* t = (*model)->Find(w["name"].get<std::string>());
    ASSERT_NE(t, nullptr) << w["name"];
    ExpectTensorMatches(*t, w);
  }
  EXPECT_EQ((*model)->TensorNames(), names);
  EXPECT_EQ((*model)->Find("nope"), nullptr);
  // A trailing slash is fine too.
  EXPECT_TRUE(SafetensorsModel::OpenDir(FormatData("sharded") + "/").ok());
}

TEST(SafetensorsModelTest, PrefersSingleFile) {
  const std::string dir = testing_util::MakeTempDir("single");
  fs::copy_file(FormatData("small.safetensors"), dir + "/model.safetensors");
  WriteBytes(dir + "/model.safetensors.index.json", {'x'});  // ignored
  auto model = SafetensorsModel::OpenDir(dir);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ((*model)->TensorNames().size(), 9u);
  EXPECT_NE((*model)->Find("c.bf16"), nullptr);
}

std::string ShardedCopy(const std::string& name, const std::string& index_json) {
  const std::string dir = testing_util::MakeTempDir(name);
  for (const char* f : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
    fs::copy_file(FormatData(std::string("sharded/") + f), dir + "/" + f);
  }
  WriteBytes(dir + "/model.safetensors.index.json",
             std::vector<uint8_t>(index_json.begin(), index_json.end()));
  return dir;
}

void ExpectDirError(const std::string& dir, const std::string& needle) {
  auto model = SafetensorsModel::OpenDir(dir);
  ASSERT_FALSE(model.ok()) << needle;
  EXPECT_NE(model.status().message().find(needle), std::string::npos) << model.status().ToString();
}

TEST(SafetensorsModelTest, RejectsBadFolders) {
  EXPECT_EQ(SafetensorsModel::OpenDir(testing_util::MakeTempDir("empty")).status().code(),
            Status::Code::kNotFound);
  const std::string s1 = "\"model-00001-of-00002.safetensors\"";
  const std::string s2 = "\"model-00002-of-00002.safetensors\"";
  ExpectDirError(
      ShardedCopy("escape", R"({"weight_map":{"a":"../model-00001-of-00002.safetensors"}})"),
      "'a' maps to an invalid shard file name");
  ExpectDirError(ShardedCopy("abs", R"({"weight_map":{"a":"/etc/passwd"}})"), "invalid shard");
  ExpectDirError(ShardedCopy("num", R"({"weight_map":{"a":3}})"), "invalid shard");
  ExpectDirError(ShardedCopy("nomap", R"({"metadata":{}})"), "weight_map");
  ExpectDirError(ShardedCopy("emptymap", R"({"weight_map":{}})"), "empty weight_map");
  ExpectDirError(ShardedCopy("badjson", R"({"weight_map":)"), "invalid JSON");
  ExpectDirError(ShardedCopy("missing_shard", R"({"weight_map":{"a":"gone.safetensors"}})"),
                 "gone.safetensors");
  ExpectDirError(ShardedCopy("missing_tensor", "{\"weight_map\":{\"lm_head.weight\":" + s2 +
                                                   ",\"model.ghost\":" + s1 + "}}"),
                 "'model.ghost' is listed in shard model-00001-of-00002.safetensors");
  ExpectDirError(ShardedCopy("wrong_shard", "{\"weight_map\":{\"lm_head.weight\":" + s1 +
                                                ",\"model.embed.weight\":" + s2 + "}}"),
                 "'lm_head.weight' is listed in shard");
  // The same tensor in two shards.
  const std::string dup = ShardedCopy(
      "dup", "{\"weight_map\":{\"lm_head.weight\":" + s2 + ",\"x\":\"extra.safetensors\"}}");
  fs::copy_file(dup + "/model-00002-of-00002.safetensors", dup + "/extra.safetensors");
  ExpectDirError(dup, "'lm_head.weight' appears in both");
}

}  // namespace
}  // namespace jisu
