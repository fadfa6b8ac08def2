// Weights to the GPU: host matrices of any dtype dequantized row by row into BF16 through
// pinned staging buffers, or random values generated on the device for benchmarks.
#include <cmath>
#include <vector>

#include "backend/cuda/cuda_backend_impl.h"
#include "core/half.h"
#include "ops/quant.h"

namespace jisu::cuda_detail {
namespace {

// Uploads host matrices row by row: each row is dequantized to float, rounded to BF16 into one
// of two pinned staging buffers, and copied asynchronously while the other buffer fills. The
// host never holds more than the two staging buffers.
class WeightUploader {
 public:
  explicit WeightUploader(cudaStream_t stream) : stream_(stream) {}
  ~WeightUploader() {
    for (int i = 0; i < 2; ++i) {
      if (done_[i]) cudaEventDestroy(done_[i]);
      if (stage_[i]) cudaFreeHost(stage_[i]);
    }
  }

  Status Init() {
    for (int i = 0; i < 2; ++i) {
      JISU_CUDA_RETURN(cudaMallocHost(reinterpret_cast<void**>(&stage_[i]), kStageBytes));
      JISU_CUDA_RETURN(cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming));
    }
    return Status::Ok();
  }

  // Copies `w` into rows [row0, row0 + w.rows) of dst, converted to dst's storage type.
  Status Matrix(const WeightMatrix& w, DeviceWeight& dst, int64_t row0 = 0) {
    if (!IsSupportedWeightType(w.dtype)) {
      return Status::Unsupported("cuda backend: weight type " + std::string(DTypeName(w.dtype)) +
                                 " cannot be uploaded");
    }
    if (w.cols != dst.cols || row0 + w.rows > dst.rows) {
      return Status::Internal("cuda backend: weight upload out of its matrix");
    }
    if (!dst.is_bf16()) {
      return Status::Unsupported("cuda backend: no upload to " + std::string(DTypeName(dst.type)));
    }
    return Bf16Rows(w, dst.data.as<uint16_t>() + row0 * w.cols);
  }

 private:
  // Each row dequantized to float and rounded to BF16.
  Status Bf16Rows(const WeightMatrix& w, uint16_t* dst) {
    row_.resize(w.cols);
    const int64_t rows_per_stage = std::max<int64_t>(1, kStageBytes / (w.cols * 2));
    for (int64_t r0 = 0; r0 < w.rows; r0 += rows_per_stage) {
      const int64_t n = std::min(rows_per_stage, w.rows - r0);
      JISU_CUDA_RETURN(cudaEventSynchronize(done_[cur_]));  // this buffer's last copy is done
      uint16_t* stage = stage_[cur_];
      for (int64_t r = 0; r < n; ++r) {
        const auto* src = static_cast<const uint8_t*>(w.data) + (r0 + r) * w.row_bytes;
        DequantizeRow(w.dtype, src, row_.data(), w.cols);
        for (int64_t c = 0; c < w.cols; ++c) stage[r * w.cols + c] = F32ToBf16(row_[c]);
      }
      JISU_CUDA_RETURN(cudaMemcpyAsync(dst + r0 * w.cols, stage, n * w.cols * 2,
                                       cudaMemcpyHostToDevice, stream_));
      JISU_CUDA_RETURN(cudaEventRecord(done_[cur_], stream_));
      cur_ ^= 1;
    }
    return Status::Ok();
  }

  static constexpr int64_t kStageBytes = 16 << 20;
  cudaStream_t stream_;
  uint16_t* stage_[2] = {nullptr, nullptr};
  cudaEvent_t done_[2] = {nullptr, nullptr};
  int cur_ = 0;
  std::vector<float> row_;
};

Status UploadFloats(const std::vector<float>& host, DeviceBuffer& dst) {
  JISU_RETURN_IF_ERROR(dst.Resize(host.size() * sizeof(float)));
  JISU_CUDA_RETURN(
      cudaMemcpy(dst.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return Status::Ok();
}

}  // namespace

Status CudaBackend::AllocateWeights() {
  const ModelConfig& c = config_;
  const uint64_t h = c.hidden_size, f = c.intermediate_size;
  // BF16 until Upload knows the host types (FillRandom's benchmarks stay BF16).
  const DType bf16 = DType::kBF16;
  JISU_RETURN_IF_ERROR(embedding_.Allocate(bf16, c.vocab_size, h));
  if (!c.tie_word_embeddings) JISU_RETURN_IF_ERROR(lm_head_.Allocate(bf16, c.vocab_size, h));
  layers_.resize(c.num_layers);
  for (DeviceLayer& l : layers_) {
    JISU_RETURN_IF_ERROR(l.wqkv.Allocate(bf16, QkvDim(), h));
    JISU_RETURN_IF_ERROR(l.wo.Allocate(bf16, h, c.q_dim()));
    JISU_RETURN_IF_ERROR(l.w_gate_up.Allocate(bf16, 2 * f, h));
    JISU_RETURN_IF_ERROR(l.w_down.Allocate(bf16, h, f));
    JISU_RETURN_IF_ERROR(l.attn_norm.Resize(h * 4));
    JISU_RETURN_IF_ERROR(l.ffn_norm.Resize(h * 4));
    if (program_.Uses(WeightId::kPostAttnNorm)) {
      JISU_RETURN_IF_ERROR(l.post_attn_norm.Resize(h * 4));
    }
    if (program_.Uses(WeightId::kPostFfnNorm)) JISU_RETURN_IF_ERROR(l.post_ffn_norm.Resize(h * 4));
    if (plan_.head_norm) {
      JISU_RETURN_IF_ERROR(l.q_norm.Resize(c.head_dim * 4));
      JISU_RETURN_IF_ERROR(l.k_norm.Resize(c.head_dim * 4));
    }
    if (plan_.qkv_bias) JISU_RETURN_IF_ERROR(l.bqkv.Resize(QkvDim() * 4));
  }
  JISU_RETURN_IF_ERROR(final_norm_.Resize(h * 4));
  return Status::Ok();
}

Status CudaBackend::Upload(const ModelWeights& w) {
  const ModelConfig& c = config_;
  WeightUploader up(stream_);
  JISU_RETURN_IF_ERROR(up.Init());
  // Each device matrix in the storage type DeviceStorageType picks for its host parts.
  auto allocate = [](DeviceWeight& d, std::initializer_list<const WeightMatrix*> parts) {
    int64_t rows = 0;
    std::vector<DType> types;
    for (const WeightMatrix* p : parts) {
      rows += p->rows;
      types.push_back(p->dtype);
    }
    return d.Allocate(DeviceStorageType(types), rows, (*parts.begin())->cols);
  };
  JISU_RETURN_IF_ERROR(allocate(embedding_, {&w.embedding}));
  JISU_RETURN_IF_ERROR(up.Matrix(w.embedding, embedding_));
  // Tied heads are the embedding matrix itself (same host view): share the device copy.
  const bool tied = w.lm_head.data == w.embedding.data;
  if (!tied) {
    JISU_RETURN_IF_ERROR(allocate(lm_head_, {&w.lm_head}));
    JISU_RETURN_IF_ERROR(up.Matrix(w.lm_head, lm_head_));
  } else {
    lm_head_.Reset();
  }
  bf16_weights_ = embedding_.is_bf16() && (tied || lm_head_.is_bf16());
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const LayerWeights& src = w.layers[i];
    DeviceLayer& dst = layers_[i];
    JISU_RETURN_IF_ERROR(allocate(dst.wqkv, {&src.wq, &src.wk, &src.wv}));
    JISU_RETURN_IF_ERROR(up.Matrix(src.wq, dst.wqkv));
    JISU_RETURN_IF_ERROR(up.Matrix(src.wk, dst.wqkv, src.wq.rows));
    JISU_RETURN_IF_ERROR(up.Matrix(src.wv, dst.wqkv, src.wq.rows + src.wk.rows));
    JISU_RETURN_IF_ERROR(allocate(dst.wo, {&src.wo}));
    JISU_RETURN_IF_ERROR(up.Matrix(src.wo, dst.wo));
    JISU_RETURN_IF_ERROR(allocate(dst.w_gate_up, {&src.w_gate, &src.w_up}));
    JISU_RETURN_IF_ERROR(up.Matrix(src.w_gate, dst.w_gate_up));
    JISU_RETURN_IF_ERROR(up.Matrix(src.w_up, dst.w_gate_up, src.w_gate.rows));
    JISU_RETURN_IF_ERROR(allocate(dst.w_down, {&src.w_down}));
    JISU_RETURN_IF_ERROR(up.Matrix(src.w_down, dst.w_down));
    for (const DeviceWeight* m : {&dst.wqkv, &dst.wo, &dst.w_gate_up, &dst.w_down}) {
      bf16_weights_ = bf16_weights_ && m->is_bf16();
    }
    JISU_RETURN_IF_ERROR(UploadFloats(src.attn_norm, dst.attn_norm));
    JISU_RETURN_IF_ERROR(UploadFloats(src.ffn_norm, dst.ffn_norm));
    if (program_.Uses(WeightId::kPostAttnNorm)) {
      JISU_RETURN_IF_ERROR(UploadFloats(src.post_attn_norm, dst.post_attn_norm));
    }
    if (program_.Uses(WeightId::kPostFfnNorm)) {
      JISU_RETURN_IF_ERROR(UploadFloats(src.post_ffn_norm, dst.post_ffn_norm));
    }
    if (plan_.qkv_bias) {
      std::vector<float> b = src.bq;
      b.insert(b.end(), src.bk.begin(), src.bk.end());
      b.insert(b.end(), src.bv.begin(), src.bv.end());
      JISU_RETURN_IF_ERROR(UploadFloats(b, dst.bqkv));
    }
    if (plan_.head_norm) {
      JISU_RETURN_IF_ERROR(UploadFloats(src.q_norm, dst.q_norm));
      JISU_RETURN_IF_ERROR(UploadFloats(src.k_norm, dst.k_norm));
    }
  }
  JISU_RETURN_IF_ERROR(UploadFloats(w.final_norm, final_norm_));
  // The file's rope frequency factors (Llama 3.1) change the program's global table.
  program_ = BuildModelProgram(c, w.rope_freq_factors ? &*w.rope_freq_factors : nullptr);
  JISU_RETURN_IF_ERROR(UploadRopeTables());
  JISU_CUDA_RETURN(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

Status CudaBackend::UploadRopeTables() {
  inv_freqs_.resize(program_.ropes.size());
  for (size_t i = 0; i < program_.ropes.size(); ++i) {
    JISU_RETURN_IF_ERROR(UploadFloats(program_.ropes[i].inv_freq, inv_freqs_[i]));
  }
  return Status::Ok();
}

Status CudaBackend::FillRandom(uint64_t seed) {
  const ModelConfig& c = config_;
  const int64_t h = c.hidden_size;
  // Uniform(+-s) with s = sqrt(3 / fan_in) keeps each projection's output variance at that of
  // its input, so activations stay finite through all layers.
  auto fill = [&](DeviceWeight& b, int64_t fan_in, uint64_t salt) {
    cuda::LaunchFillRandomBf16(b.data.as<uint16_t>(), b.data.size() / 2,
                               std::sqrt(3.0f / static_cast<float>(fan_in)), seed * 1000003 + salt,
                               stream_);
  };
  fill(embedding_, 3, 1);
  if (!lm_head_.empty()) fill(lm_head_, h, 2);
  uint64_t salt = 10;
  for (DeviceLayer& l : layers_) {
    fill(l.wqkv, h, salt++);
    fill(l.wo, c.q_dim(), salt++);
    fill(l.w_gate_up, h, salt++);
    fill(l.w_down, c.intermediate_size, salt++);
    for (DeviceBuffer* n : {&l.attn_norm, &l.ffn_norm, &l.post_attn_norm, &l.post_ffn_norm}) {
      if (n->size()) cuda::LaunchFillF32(n->as<float>(), h, 1.0f, stream_);
    }
    if (plan_.qkv_bias) cuda::LaunchFillF32(l.bqkv.as<float>(), QkvDim(), 0.0f, stream_);
    if (plan_.head_norm) {
      cuda::LaunchFillF32(l.q_norm.as<float>(), c.head_dim, 1.0f, stream_);
      cuda::LaunchFillF32(l.k_norm.as<float>(), c.head_dim, 1.0f, stream_);
    }
  }
  cuda::LaunchFillF32(final_norm_.as<float>(), h, 1.0f, stream_);
  JISU_RETURN_IF_ERROR(UploadRopeTables());
  JISU_CUDA_RETURN(cudaGetLastError());
  JISU_CUDA_RETURN(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

}  // namespace jisu::cuda_detail
