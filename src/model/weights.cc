#include "model/weights.h"

#include <sstream>
#include <utility>

#include "format/gguf.h"
#include "format/safetensors.h"
#include "model/tensor_names.h"
#include "ops/quant.h"

namespace jisu {
namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

Result<TensorRef> Require(const TensorSource& src, const std::string& name,
                          const std::vector<int64_t>& shape, bool widenable = false) {
  std::optional<TensorRef> t = src.Find(name);
  if (!t) return Status::NotFound("tensor '" + name + "' is missing");
  if (t->shape != shape) {
    return Status::InvalidArgument("tensor '" + t->name + "' has shape " + ShapeString(t->shape) +
                                   ", expected " + ShapeString(shape));
  }
  if (!IsSupportedWeightType(t->dtype) && !(widenable && t->dtype == DType::kQ5_0)) {
    return Status::Unsupported("tensor '" + t->name + "' has type " +
                               std::string(DTypeName(t->dtype)) + ", which is not supported");
  }
  uint64_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<uint64_t>(d);
  const auto bytes = RowBytes(t->dtype, numel);
  if (!bytes || *bytes != t->num_bytes) {
    return Status::Corrupt("tensor '" + t->name + "' has " + std::to_string(t->num_bytes) +
                           " bytes, which does not match its type and shape");
  }
  return *t;
}

Result<WeightMatrix> RequireMatrix(const TensorSource& src, const std::string& name, int64_t rows,
                                   int64_t cols, ModelWeights& w) {
  JISU_ASSIGN_OR_RETURN(TensorRef t, Require(src, name, {rows, cols}, /*widenable=*/true));
  if (t.dtype == DType::kQ5_0) {
    const int64_t blocks = rows * (cols / 32);  // Require checked the row length
    std::shared_ptr<uint8_t[]> owned(new uint8_t[static_cast<size_t>(blocks) * sizeof(BlockQ8_0)]);
    WidenQ5_0ToQ8_0(t.data, reinterpret_cast<BlockQ8_0*>(owned.get()), blocks);
    t.dtype = DType::kQ8_0;
    t.data = owned.get();
    w.widened.push_back(std::move(owned));
  }
  const auto row_bytes = RowBytes(t.dtype, static_cast<uint64_t>(cols));
  if (!row_bytes) {
    return Status::InvalidArgument("tensor '" + t.name + "': row length " + std::to_string(cols) +
                                   " is not a multiple of the " + std::string(DTypeName(t.dtype)) +
                                   " block size");
  }
  WeightMatrix m;
  m.dtype = t.dtype;
  m.data = t.data;
  m.rows = rows;
  m.cols = cols;
  m.row_bytes = *row_bytes;
  return m;
}

Result<std::vector<float>> RequireVector(const TensorSource& src, const std::string& name,
                                         int64_t n) {
  JISU_ASSIGN_OR_RETURN(TensorRef t, Require(src, name, {n}));
  std::vector<float> out(static_cast<size_t>(n));
  DequantizeRow(t.dtype, t.data, out.data(), n);
  return out;
}

}  // namespace

const WeightMatrix* LayerWeights::Matrix(WeightId id) const {
  switch (id) {
    case WeightId::kWq:
      return &wq;
    case WeightId::kWk:
      return &wk;
    case WeightId::kWv:
      return &wv;
    case WeightId::kWo:
      return &wo;
    case WeightId::kWGate:
      return &w_gate;
    case WeightId::kWUp:
      return &w_up;
    case WeightId::kWDown:
      return &w_down;
    default:
      return nullptr;
  }
}

const std::vector<float>* LayerWeights::Vector(WeightId id) const {
  switch (id) {
    case WeightId::kAttnNorm:
      return &attn_norm;
    case WeightId::kFfnNorm:
      return &ffn_norm;
    case WeightId::kBq:
      return &bq;
    case WeightId::kBk:
      return &bk;
    case WeightId::kBv:
      return &bv;
    case WeightId::kQNorm:
      return &q_norm;
    case WeightId::kKNorm:
      return &k_norm;
    case WeightId::kPostAttnNorm:
      return &post_attn_norm;
    case WeightId::kPostFfnNorm:
      return &post_ffn_norm;
    default:
      return nullptr;
  }
}

std::optional<TensorRef> GgufTensorSource::Find(const std::string& canonical_name) const {
  const GgufTensorInfo* info = gguf_.FindTensor(canonical_name);
  if (info == nullptr) return std::nullopt;
  return TensorRef{info->name, info->dtype, info->shape, info->data, info->num_bytes};
}

std::optional<TensorRef> SafetensorsTensorSource::Find(const std::string& canonical_name) const {
  const std::optional<std::string> hf = HfTensorName(canonical_name, arch_);
  if (!hf) return std::nullopt;
  const SafetensorsTensor* t = model_.Find(*hf);
  if (t == nullptr) return std::nullopt;
  return TensorRef{t->name, t->dtype, t->shape, t->data, t->num_bytes};
}

uint64_t ModelWeights::MatrixBytes() const {
  auto bytes = [](const WeightMatrix& m) { return m.row_bytes * static_cast<uint64_t>(m.rows); };
  uint64_t total = bytes(lm_head);
  for (const LayerWeights& l : layers) {
    total += bytes(l.wq) + bytes(l.wk) + bytes(l.wv) + bytes(l.wo) + bytes(l.w_gate) +
             bytes(l.w_up) + bytes(l.w_down);
  }
  return total;
}

Result<ModelWeights> LoadModelWeights(const TensorSource& src, const ModelConfig& c) {
  ModelWeights w;
  const int64_t h = c.hidden_size;
  JISU_ASSIGN_OR_RETURN(w.embedding, RequireMatrix(src, "token_embd.weight", c.vocab_size, h, w));
  JISU_ASSIGN_OR_RETURN(w.final_norm, RequireVector(src, "output_norm.weight", h));
  for (float& x : w.final_norm) x += c.norm_weight_offset;
  if (src.Find("output.weight")) {
    JISU_ASSIGN_OR_RETURN(w.lm_head, RequireMatrix(src, "output.weight", c.vocab_size, h, w));
  } else if (c.tie_word_embeddings) {
    w.lm_head = w.embedding;
  } else {
    return Status::NotFound(
        "tensor 'output.weight' (lm_head.weight) is missing and the config "
        "does not tie word embeddings");
  }
  if (std::optional<TensorRef> rf = src.Find("rope_freqs.weight")) {
    JISU_ASSIGN_OR_RETURN(w.rope_freq_factors,
                          RequireVector(src, "rope_freqs.weight", c.head_dim / 2));
  }
  const ModelProgram program = BuildModelProgram(c);
  const std::vector<WeightId> used = program.UsedWeights();
  w.layers.resize(static_cast<size_t>(c.num_layers));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    LayerWeights& l = w.layers[static_cast<size_t>(i)];
    for (WeightId id : used) {
      const std::string name = LayerTensorName(i, LayerWeightName(id));
      const auto [rows, cols] = LayerWeightShape(c, id);
      if (WeightMatrix* m = l.Matrix(id)) {
        JISU_ASSIGN_OR_RETURN(*m, RequireMatrix(src, name, rows, cols, w));
        continue;
      }
      std::vector<float>* v = l.Vector(id);
      JISU_ASSIGN_OR_RETURN(*v, RequireVector(src, name, rows));
      if (IsNormWeight(id) && c.norm_weight_offset != 0.0f) {
        for (float& x : *v) x += c.norm_weight_offset;
      }
    }
  }
  return w;
}

}  // namespace jisu
