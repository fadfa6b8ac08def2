// GgufWriter::AddTensorStreamed: the same bytes as AddTensor, errors from the fill reported
// and no partial file left behind.
#include <gtest/gtest.h>

#include <filesystem>

#include "format/gguf_writer.h"

namespace jisu {
namespace {

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

TEST(GgufWriterStream, StreamedTensorsSerializeLikeCopiedOnes) {
  GgufWriter copied, streamed;
  for (GgufWriter* w : {&copied, &streamed}) w->AddString("general.architecture", "llama");
  copied.AddTensor("a", DType::kF32, {3, 5}, Bytes(60, 1));
  copied.AddTensor("b", DType::kQ8_0, {2, 64}, Bytes(2 * 68, 2));
  int calls = 0;
  streamed.AddTensorStreamed("a", DType::kF32, {3, 5}, [&](uint8_t* dst, uint64_t n) {
    ++calls;
    EXPECT_EQ(n, 60u);
    const auto b = Bytes(60, 1);
    std::copy(b.begin(), b.end(), dst);
    return Status::Ok();
  });
  streamed.AddTensorStreamed("b", DType::kQ8_0, {2, 64}, [&](uint8_t* dst, uint64_t n) {
    ++calls;
    EXPECT_EQ(n, 136u);
    const auto b = Bytes(136, 2);
    std::copy(b.begin(), b.end(), dst);
    return Status::Ok();
  });
  auto a = copied.Serialize();
  auto b = streamed.Serialize();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(calls, 2);
}

TEST(GgufWriterStream, FillErrorsAndBadShapesAreReported) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("jisu_stream_" + std::to_string(::getpid()) + ".gguf"))
                               .string();
  GgufWriter w;
  w.AddTensorStreamed("t", DType::kF32, {4},
                      [](uint8_t*, uint64_t) { return Status::Corrupt("generator broke"); });
  Status st = w.Write(path);
  EXPECT_EQ(st.code(), Status::Code::kCorrupt);
  EXPECT_NE(st.message().find("generator broke"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("tensor t"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(path));

  GgufWriter bad;
  bad.AddTensorStreamed("q", DType::kQ4_0, {2, 33}, [](uint8_t*, uint64_t) {
    ADD_FAILURE() << "fill called for an invalid shape";
    return Status::Ok();
  });
  EXPECT_EQ(bad.Serialize().status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace jisu
