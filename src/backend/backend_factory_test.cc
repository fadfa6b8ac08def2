#include "backend/backend_factory.h"

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace jisu {
namespace {

TEST(KvMemoryTest, ParsesSizesAndFractions) {
  auto a = KvMemory::Parse("16MiB");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->bytes, 16u << 20);
  auto b = KvMemory::Parse("2GiB");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->bytes, 2ull << 30);
  auto c = KvMemory::Parse("1.5GB");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->bytes, 1500000000u);
  auto d = KvMemory::Parse("0.9");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->bytes, 0u);
  EXPECT_DOUBLE_EQ(d->fraction, 0.9);
  auto e = KvMemory::Parse("4096");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->bytes, 4096u);
}

TEST(KvMemoryTest, RejectsGarbage) {
  for (const char* bad : {"", "abc", "-1", "0", "12XB", "nan", "inf", "1e30GiB", "0.5MiBx"}) {
    EXPECT_FALSE(KvMemory::Parse(bad).ok()) << bad;
  }
}

TEST(DeviceTest, Parses) {
  EXPECT_EQ(*ParseDevice("cpu"), DeviceKind::kCpu);
  EXPECT_EQ(*ParseDevice("auto"), DeviceKind::kAuto);
  EXPECT_EQ(*ParseDevice("cuda:1"), DeviceKind::kCuda);
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", "cuda:99999999"}) {
    EXPECT_FALSE(ParseDevice(bad).ok()) << bad;
  }
}

TEST(BackendFactoryTest, CpuBackendSizedFromBudget) {
  auto model = Model::Load((testing::SourceDir() / "models" / "tiny-llama").string());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  BackendOptions options;
  options.device = "cpu";
  options.kv_memory = *KvMemory::Parse("8MiB");
  options.block_size = 16;
  options.num_threads = 1;
  auto backend = CreateBackend(**model, options);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  const uint64_t per_block = (*backend)->kv_bytes_per_block();
  EXPECT_EQ((*backend)->num_kv_blocks(), static_cast<int64_t>((8u << 20) / per_block));
  EXPECT_EQ((*backend)->kv_block_size(), 16);
  EXPECT_NE((*backend)->description().find("cpu"), std::string::npos);
  EXPECT_NE((*backend)->description().find("kv f16"), std::string::npos);  // the default

  // F32 elements: twice the bytes per block, half the blocks in the same budget.
  options.kv_type = KvType::kF32;
  auto f32 = CreateBackend(**model, options);
  ASSERT_TRUE(f32.ok()) << f32.status().ToString();
  EXPECT_EQ((*f32)->kv_bytes_per_block(), 2 * per_block);
  EXPECT_EQ((*f32)->num_kv_blocks(), static_cast<int64_t>((8u << 20) / (2 * per_block)));
  options.kv_type = kDefaultKvType;

  options.kv_memory = *KvMemory::Parse("16B");
  EXPECT_FALSE(CreateBackend(**model, options).ok());  // not one block
  options.kv_memory = *KvMemory::Parse("0.01");
  options.max_kv_blocks = 7;
  auto capped = CreateBackend(**model, options);
  ASSERT_TRUE(capped.ok()) << capped.status().ToString();
  EXPECT_EQ((*capped)->num_kv_blocks(), 7);
}

TEST(BackendFactoryTest, CudaWithoutGpuIsAClearError) {
  std::string why;
  if (CudaBackendAvailable(&why)) GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(why.empty());
  auto model = Model::Load((testing::SourceDir() / "models" / "tiny-llama").string());
  ASSERT_TRUE(model.ok());
  BackendOptions options;
  options.device = "cuda";
  options.kv_memory = *KvMemory::Parse("8MiB");
  auto backend = CreateBackend(**model, options);
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.status().ToString().find("cuda"), std::string::npos);
}

}  // namespace
}  // namespace jisu
