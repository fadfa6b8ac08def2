#include "testmodel/dummy_model.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/cpu_info.h"
#include "core/thread_pool.h"
#include "format/gguf_writer.h"
#include "model/layer_program.h"
#include "model/model.h"
#include "model/tensor_names.h"
#include "ops/quant.h"
#include "testmodel/model_shapes.h"
#include "testmodel/synthetic_vocab.h"

namespace jisu {
namespace {

constexpr float kStd = 0.02f;

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t HashName(const std::string& s) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

bool IsFourBit(DType t) { return t == DType::kQ4_0 || t == DType::kQ4_1; }

struct TensorPlan {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  float mean = 0.0f;         // 1 for norms
  std::vector<float> fixed;  // exact values (rope factors) instead of random ones
};

std::vector<TensorPlan> PlanTensors(const DummyModelOptions& o) {
  const ModelConfig& c = o.config;
  const int64_t h = c.hidden_size;
  const DType head = IsFourBit(o.type) ? DType::kQ8_0 : o.type;
  auto matrix_type = [&](DType t, int64_t cols) {
    return RowBytes(t, static_cast<uint64_t>(cols)) ? t : DType::kF16;
  };
  std::vector<TensorPlan> plan;
  auto matrix = [&](std::string name, int64_t rows, int64_t cols, DType t) {
    plan.push_back(TensorPlan{std::move(name), matrix_type(t, cols), {rows, cols}, 0.0f, {}});
  };
  auto vec = [&](std::string name, int64_t n, float mean) {
    plan.push_back(TensorPlan{std::move(name), DType::kF32, {n}, mean, {}});
  };
  matrix("token_embd.weight", c.vocab_size, h, c.tie_word_embeddings ? head : o.type);
  vec("output_norm.weight", h, 1.0f);
  if (!c.tie_word_embeddings) matrix("output.weight", c.vocab_size, h, head);
  if (c.rope_scaling.type == RopeScaling::Type::kLlama3) {
    // Readers divide the inverse frequencies by these factors (as `jisu convert` writes them).
    ModelConfig unscaled = c;
    unscaled.rope_scaling = RopeScaling{};
    const std::vector<float> base = RopeInverseFrequencies(unscaled);
    const std::vector<float> scaled = RopeInverseFrequencies(c);
    TensorPlan p{"rope_freqs.weight", DType::kF32, {c.head_dim / 2}, 0.0f, {}};
    for (size_t i = 0; i < base.size(); ++i) p.fixed.push_back(base[i] / scaled[i]);
    plan.push_back(std::move(p));
  }
  // Every weight the architecture's layer program reads: norms 1, biases 0, matrices random.
  const std::vector<WeightId> used = BuildModelProgram(c).UsedWeights();
  for (int64_t i = 0; i < c.num_layers; ++i) {
    for (WeightId id : used) {
      const std::string name = LayerTensorName(i, LayerWeightName(id));
      const auto [rows, cols] = LayerWeightShape(c, id);
      if (cols > 0) {
        matrix(name, rows, cols, o.type);
      } else {
        vec(name, rows, IsNormWeight(id) ? 1.0f : 0.0f);
      }
    }
  }
  return plan;
}

Status ValidateOptions(const DummyModelOptions& o) {
  JISU_RETURN_IF_ERROR(o.config.Validate());
  const DType t = o.type;
  if (t != DType::kF32 && t != DType::kF16 && t != DType::kBF16 && t != DType::kQ8_0 &&
      t != DType::kQ4_0 && t != DType::kQ4_1) {
    return Status::InvalidArgument("unsupported weight type " + std::string(DTypeName(t)) +
                                   " (supported: f32, f16, bf16, q8_0, q4_0, q4_1)");
  }
  if (o.config.vocab_size < kMinSyntheticVocab) {
    return Status::InvalidArgument("vocab_size " + std::to_string(o.config.vocab_size) +
                                   " is too small for the synthetic tokenizer (minimum " +
                                   std::to_string(kMinSyntheticVocab) + ")");
  }
  return Status::Ok();
}

}  // namespace

void DummyRandomRow(uint64_t seed, uint64_t tensor_key, int64_t row, float mean, float std,
                    float* out, int64_t n) {
  uint64_t state = seed * 0xD1B54A32D192ED03ull ^ tensor_key ^
                   (static_cast<uint64_t>(row) * 0x9E3779B97F4A7C15ull);
  SplitMix64(state);
  // Sum of four 16-bit uniforms: mean 4 * 32767.5, std 65536 / sqrt(3) (Irwin-Hall), close
  // enough to a normal for weights that only need a scale.
  const float scale = std / (65536.0f / std::sqrt(3.0f));
  const float center = 4.0f * 32767.5f;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = SplitMix64(state);
    const uint32_t s = static_cast<uint32_t>(r & 0xFFFF) +
                       static_cast<uint32_t>((r >> 16) & 0xFFFF) +
                       static_cast<uint32_t>((r >> 32) & 0xFFFF) + static_cast<uint32_t>(r >> 48);
    out[i] = mean + (static_cast<float>(s) - center) * scale;
  }
}

uint64_t DummyGgufTensorBytes(const DummyModelOptions& options) {
  uint64_t total = 0;
  for (const TensorPlan& t : PlanTensors(options)) {
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    total += RowBytes(t.dtype, n).value_or(0);
  }
  return total;
}

Status WriteDummyGguf(const std::string& path, const DummyModelOptions& o) {
  JISU_RETURN_IF_ERROR(ValidateOptions(o));
  const ModelConfig& c = o.config;
  JISU_ASSIGN_OR_RETURN(SyntheticVocab vocab, MakeSyntheticVocab(c.vocab_size));
  GgufWriter w;
  AddModelConfigToGguf(c, w);
  w.AddString("general.name", o.name.empty() ? "jisu-dummy" : o.name);
  w.AddU32("general.file_type", GgufFileType(o.type));
  w.AddU32("general.quantization_version", 2);
  AddSyntheticVocab(vocab, w);
  vocab = SyntheticVocab{};  // the writer holds its own copy

  auto pool = std::make_shared<ThreadPool>(o.threads);
  for (TensorPlan& t : PlanTensors(o)) {
    const uint64_t key = HashName(t.name);
    const int64_t rows = t.shape.size() == 2 ? t.shape[0] : 1;
    const int64_t cols = t.shape.back();
    const DType dtype = t.dtype;
    const float mean = t.mean;
    std::vector<float> fixed = std::move(t.fixed);
    const uint64_t seed = o.seed;
    w.AddTensorStreamed(t.name, dtype, t.shape, [=](uint8_t* dst, uint64_t num_bytes) -> Status {
      const uint64_t row_bytes = *RowBytes(dtype, static_cast<uint64_t>(cols));
      if (row_bytes * static_cast<uint64_t>(rows) != num_bytes) {
        return Status::Internal("dummy tensor size mismatch");
      }
      if (!fixed.empty()) {
        std::memcpy(dst, fixed.data(), num_bytes);
        return Status::Ok();
      }
      pool->ParallelFor(rows, 16, [&](int64_t begin, int64_t end) {
        std::vector<float> row(static_cast<size_t>(cols));
        for (int64_t r = begin; r < end; ++r) {
          DummyRandomRow(seed, key, r, mean, kStd, row.data(), cols);
          QuantizeRow(dtype, row.data(), dst + static_cast<uint64_t>(r) * row_bytes, cols);
        }
      });
      return Status::Ok();
    });
  }
  return w.Write(path);
}

bool IsDummyModelSpec(const std::string& spec) { return spec.rfind("dummy:", 0) == 0; }

Result<std::unique_ptr<Model>> LoadDummyModel(const std::string& spec, const LoadOptions& options) {
  if (!IsDummyModelSpec(spec)) return Status::InvalidArgument("not a dummy:SHAPE spec: " + spec);
  std::vector<std::string> parts;
  for (size_t start = 6;;) {
    const size_t colon = spec.find(':', start);
    parts.push_back(spec.substr(start, colon == std::string::npos ? colon : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3 || parts[0].empty()) {
    return Status::InvalidArgument("dummy model spec must be dummy:SHAPE[:TYPE[:SEED]], got '" +
                                   spec + "'");
  }
  DummyModelOptions o;
  JISU_ASSIGN_OR_RETURN(o.config, NamedModelShape(parts[0]));
  o.type = DType::kQ4_0;
  if (parts.size() > 1) {
    const auto type = DTypeFromName(parts[1]);
    if (!type) return Status::InvalidArgument("dummy model spec: unknown type '" + parts[1] + "'");
    o.type = *type;
  }
  if (parts.size() > 2) {
    char* end = nullptr;
    o.seed = std::strtoull(parts[2].c_str(), &end, 10);
    if (parts[2].empty() || *end != '\0') {
      return Status::InvalidArgument("dummy model spec: seed '" + parts[2] + "' is not a number");
    }
  }
  o.name = parts[0] + "-random";
  JISU_RETURN_IF_ERROR(ValidateOptions(o));

  namespace fs = std::filesystem;
  std::string dir;
  if (const char* env = std::getenv("JISU_DUMMY_DIR"); env != nullptr && *env != '\0') {
    dir = env;
  } else {
    std::error_code ec;
    dir = fs::is_directory("/dev/shm", ec) ? "/dev/shm" : fs::temp_directory_path(ec).string();
  }
  const uint64_t need = DummyGgufTensorBytes(o);
  const CpuInfo ci = ReadCpuInfo();
  if (ci.mem_available_bytes > 0 && need + (uint64_t{1} << 30) > ci.mem_available_bytes) {
    return Status::OutOfRange("dummy model " + spec + " needs " + std::to_string(need >> 20) +
                              " MiB of weights, only " +
                              std::to_string(ci.mem_available_bytes >> 20) +
                              " MiB of memory are available (try a smaller type)");
  }
  const std::string path =
      (fs::path(dir) / ("jisu-dummy-" + std::to_string(::getpid()) + "-" + parts[0] + "-" +
                        std::string(DTypeName(o.type)) + ".gguf"))
          .string();
  std::fprintf(stderr, "making dummy model %s (%s of weights in %s)...\n", spec.c_str(),
               (std::to_string(need >> 20) + " MiB").c_str(), dir.c_str());
  Status st = WriteDummyGguf(path, o);
  Result<std::unique_ptr<Model>> model =
      st.ok() ? Model::Load(path, options) : Result<std::unique_ptr<Model>>(st);
  std::error_code ec;
  fs::remove(path, ec);  // the mapping keeps the pages alive until the model goes
  return model;
}

}  // namespace jisu
