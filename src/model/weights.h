// The weights of one decoder, as views into the model file's memory mapping (matrices in their
// stored type: F32/F16/BF16/Q8_0/Q4_0/Q4_1) plus small float copies of norms and biases.
// Loading checks every tensor's presence, type and exact shape against the config and names
// the offending tensor on failure. The tensor source (file) must outlive the weights.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "jisu/status.h"
#include "model/layer_program.h"
#include "model/model_config.h"
#include "ops/matmul.h"

namespace jisu {

class GgufFile;
class SafetensorsModel;

struct TensorRef {
  std::string name;  // as stored in the file
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // outermost first
  const uint8_t* data = nullptr;
  uint64_t num_bytes = 0;
};

// Looks tensors up by canonical (GGUF-style) name, whatever the file format.
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual std::optional<TensorRef> Find(const std::string& canonical_name) const = 0;
};

class GgufTensorSource : public TensorSource {
 public:
  explicit GgufTensorSource(const GgufFile& gguf) : gguf_(gguf) {}
  std::optional<TensorRef> Find(const std::string& canonical_name) const override;

 private:
  const GgufFile& gguf_;
};

class SafetensorsTensorSource : public TensorSource {
 public:
  // Hugging Face names depend on the architecture (tensor_names.h).
  SafetensorsTensorSource(const SafetensorsModel& model, Architecture arch)
      : model_(model), arch_(arch) {}
  std::optional<TensorRef> Find(const std::string& canonical_name) const override;

 private:
  const SafetensorsModel& model_;
  Architecture arch_;
};

struct LayerWeights {
  std::vector<float> attn_norm;       // [hidden]
  std::vector<float> ffn_norm;        // [hidden]
  WeightMatrix wq;                    // [q_dim, hidden]
  WeightMatrix wk;                    // [kv_dim, hidden]
  WeightMatrix wv;                    // [kv_dim, hidden]
  WeightMatrix wo;                    // [hidden, q_dim]
  WeightMatrix w_gate;                // [ffn, hidden]
  WeightMatrix w_up;                  // [ffn, hidden]
  WeightMatrix w_down;                // [hidden, ffn]
  std::vector<float> bq, bk, bv;      // empty unless config.attention_bias
  std::vector<float> q_norm, k_norm;  // [head_dim]; empty unless config.qk_norm
  std::vector<float> post_attn_norm;  // [hidden]; Gemma only
  std::vector<float> post_ffn_norm;   // [hidden]; Gemma only

  // The matrix or vector a layer program names (WeightId): exactly one of the two is non-null.
  const WeightMatrix* Matrix(WeightId id) const;
  const std::vector<float>* Vector(WeightId id) const;
  WeightMatrix* Matrix(WeightId id) {
    return const_cast<WeightMatrix*>(std::as_const(*this).Matrix(id));
  }
  std::vector<float>* Vector(WeightId id) {
    return const_cast<std::vector<float>*>(std::as_const(*this).Vector(id));
  }
};

struct ModelWeights {
  WeightMatrix embedding;  // [vocab, hidden]; rows gathered by dequantization
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;                        // [hidden]
  WeightMatrix lm_head;                                 // [vocab, hidden]; == embedding when tied
  std::optional<std::vector<float>> rope_freq_factors;  // GGUF rope_freqs.weight, [head_dim/2]

  uint64_t MatrixBytes() const;  // bytes of all weight matrices (what decode streams)

  // Matrices stored in a type the kernels do not read, rewritten at load into one they do
  // (Q5_0 as Q8_0, value for value); the WeightMatrix views above point into these.
  std::vector<std::shared_ptr<uint8_t[]>> widened;  // shared by copies of the views
};

// Loads every weight that config's layer program uses (layer_program.h), with its shape checked.
Result<ModelWeights> LoadModelWeights(const TensorSource& source, const ModelConfig& config);

}  // namespace jisu
