#include "model/weights.h"

#include <sstream>

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
                          const std::vector<int64_t>& shape) {
  std::optional<TensorRef> t = src.Find(name);
  if (!t) return Status::NotFound("tensor '" + name + "' is missing");
  if (t->shape != shape) {
    return Status::InvalidArgument("tensor '" + t->name + "' has shape " + ShapeString(t->shape) +
                                   ", expected " + ShapeString(shape));
  }
  if (!IsSupportedWeightType(t->dtype)) {
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
                                   int64_t cols) {
  JISU_ASSIGN_OR_RETURN(TensorRef t, Require(src, name, {rows, cols}));
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

std::optional<TensorRef> GgufTensorSource::Find(const std::string& canonical_name) const {
  const GgufTensorInfo* info = gguf_.FindTensor(canonical_name);
  if (info == nullptr) return std::nullopt;
  return TensorRef{info->name, info->dtype, info->shape, info->data, info->num_bytes};
}

std::optional<TensorRef> SafetensorsTensorSource::Find(const std::string& canonical_name) const {
  const std::optional<std::string> hf = HfTensorName(canonical_name);
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
  JISU_ASSIGN_OR_RETURN(w.embedding, RequireMatrix(src, "token_embd.weight", c.vocab_size, h));
  JISU_ASSIGN_OR_RETURN(w.final_norm, RequireVector(src, "output_norm.weight", h));
  if (src.Find("output.weight")) {
    JISU_ASSIGN_OR_RETURN(w.lm_head, RequireMatrix(src, "output.weight", c.vocab_size, h));
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
  w.layers.resize(static_cast<size_t>(c.num_layers));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    LayerWeights& l = w.layers[static_cast<size_t>(i)];
    auto name = [i](const char* suffix) { return LayerTensorName(i, suffix); };
    JISU_ASSIGN_OR_RETURN(l.attn_norm, RequireVector(src, name("attn_norm.weight"), h));
    JISU_ASSIGN_OR_RETURN(l.ffn_norm, RequireVector(src, name("ffn_norm.weight"), h));
    JISU_ASSIGN_OR_RETURN(l.wq, RequireMatrix(src, name("attn_q.weight"), c.q_dim(), h));
    JISU_ASSIGN_OR_RETURN(l.wk, RequireMatrix(src, name("attn_k.weight"), c.kv_dim(), h));
    JISU_ASSIGN_OR_RETURN(l.wv, RequireMatrix(src, name("attn_v.weight"), c.kv_dim(), h));
    JISU_ASSIGN_OR_RETURN(l.wo, RequireMatrix(src, name("attn_output.weight"), h, c.q_dim()));
    JISU_ASSIGN_OR_RETURN(l.w_gate,
                          RequireMatrix(src, name("ffn_gate.weight"), c.intermediate_size, h));
    JISU_ASSIGN_OR_RETURN(l.w_up,
                          RequireMatrix(src, name("ffn_up.weight"), c.intermediate_size, h));
    JISU_ASSIGN_OR_RETURN(l.w_down,
                          RequireMatrix(src, name("ffn_down.weight"), h, c.intermediate_size));
    if (c.attention_bias) {
      JISU_ASSIGN_OR_RETURN(l.bq, RequireVector(src, name("attn_q.bias"), c.q_dim()));
      JISU_ASSIGN_OR_RETURN(l.bk, RequireVector(src, name("attn_k.bias"), c.kv_dim()));
      JISU_ASSIGN_OR_RETURN(l.bv, RequireVector(src, name("attn_v.bias"), c.kv_dim()));
    }
  }
  return w;
}

}  // namespace jisu
