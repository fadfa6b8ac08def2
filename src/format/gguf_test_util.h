// Test-only: compares a parsed GgufFile with a fixture JSON written by
// tools/make_format_fixtures.py from what gguf.GGUFReader (Python) reads, and converts that
// JSON back into GgufValues (for the writer tests).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "format/format_test_util.h"
#include "format/gguf.h"

namespace jisu::testing_util {

inline GgufType GgufTypeFromName(const std::string& name) {
  for (uint32_t t = 0; t <= 12; ++t) {
    if (GgufTypeName(static_cast<GgufType>(t)) == name) return static_cast<GgufType>(t);
  }
  ADD_FAILURE() << "unknown type name " << name;
  return GgufType::kU8;
}

inline bool IsUnsigned(GgufType t) {
  return t == GgufType::kU8 || t == GgufType::kU16 || t == GgufType::kU32 || t == GgufType::kU64;
}

// Value of `type` from JSON; for arrays `elem` is the element type name of the outermost level
// and nested levels infer theirs from the data (the fixture nests i32 arrays only).
inline GgufValue ValueFromJson(GgufType type, GgufType elem, const nlohmann::json& j) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::kString:
      v.s = j.get<std::string>();
      break;
    case GgufType::kBool:
      v.i = j.get<bool>() ? 1 : 0;
      break;
    case GgufType::kF32:
    case GgufType::kF64:
      v.f = j.get<double>();
      break;
    case GgufType::kArray:
      v.array_type = elem;
      for (const auto& e : j) {
        v.array.push_back(ValueFromJson(elem, GgufType::kI32, e));
      }
      break;
    default:
      if (IsUnsigned(type)) {
        v.u = j.get<uint64_t>();
      } else {
        v.i = j.get<int64_t>();
      }
  }
  return v;
}

inline void ExpectValueEq(const GgufValue& got, const GgufValue& want, const std::string& ctx) {
  ASSERT_EQ(got.type, want.type) << ctx;
  switch (want.type) {
    case GgufType::kString:
      EXPECT_EQ(got.s, want.s) << ctx;
      break;
    case GgufType::kF32:
    case GgufType::kF64:
      EXPECT_EQ(got.f, want.f) << ctx;
      break;
    case GgufType::kArray:
      EXPECT_EQ(got.array_type, want.array_type) << ctx;
      ASSERT_EQ(got.array.size(), want.array.size()) << ctx;
      for (size_t k = 0; k < want.array.size(); ++k) {
        ExpectValueEq(got.array[k], want.array[k], ctx + "[" + std::to_string(k) + "]");
      }
      break;
    default:
      EXPECT_EQ(got.i, want.i) << ctx;
      EXPECT_EQ(got.u, want.u) << ctx;
  }
}

inline GgufValue EntryValue(const nlohmann::json& m) {
  const GgufType type = GgufTypeFromName(m["type"]);
  const GgufType elem =
      m.contains("array_type") ? GgufTypeFromName(m["array_type"]) : GgufType::kU8;
  return ValueFromJson(type, elem, m.contains("value") ? m["value"] : m["flat_value"]);
}

inline void ExpectGgufMatchesJson(const GgufFile& f, const nlohmann::json& want,
                                  const uint8_t* file_start) {
  EXPECT_EQ(f.version(), want["version"].get<uint32_t>());
  EXPECT_EQ(f.alignment(), want["alignment"].get<uint64_t>());
  ASSERT_EQ(f.metadata().size(), want["metadata"].size());
  for (const auto& m : want["metadata"]) {
    const std::string key = m["key"];
    const GgufValue* v = f.Find(key);
    ASSERT_NE(v, nullptr) << key;
    ExpectValueEq(*v, EntryValue(m), key);
  }
  ASSERT_EQ(f.tensors().size(), want["tensors"].size());
  for (size_t k = 0; k < f.tensors().size(); ++k) {
    const GgufTensorInfo& t = f.tensors()[k];
    const auto& w = want["tensors"][k];
    EXPECT_EQ(t.name, w["name"].get<std::string>());
    EXPECT_EQ(DTypeName(t.dtype), w["dtype"].get<std::string>()) << t.name;
    EXPECT_EQ(t.shape, w["shape"].get<std::vector<int64_t>>()) << t.name;
    EXPECT_EQ(t.offset, w["offset"].get<uint64_t>()) << t.name;
    EXPECT_EQ(t.num_bytes, w["num_bytes"].get<uint64_t>()) << t.name;
    EXPECT_EQ(t.data, file_start + t.offset) << t.name;
    const std::vector<uint8_t> bytes = HexToBytes(w["hex"]);
    ASSERT_EQ(bytes.size(), t.num_bytes) << t.name;
    EXPECT_EQ(std::memcmp(t.data, bytes.data(), bytes.size()), 0) << t.name;
    EXPECT_EQ(f.FindTensor(t.name), &t);
  }
}

}  // namespace jisu::testing_util
