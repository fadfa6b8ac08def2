#include "cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "core/half.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels.h"
#include "kv/kv_cache.h"
#include "ops/quant.h"

namespace jisu {
namespace {

using cuda::AttnItem;

// Device copies of one layer's weights. Q/K/V and gate/up are fused into one matrix each so
// that one GEMM reads the activations once.
struct DeviceLayer {
  DeviceBuffer wqkv;       // bf16 [q_dim + 2 kv_dim, hidden]
  DeviceBuffer wo;         // bf16 [hidden, q_dim]
  DeviceBuffer w_gate_up;  // bf16 [2 ffn, hidden]
  DeviceBuffer w_down;     // bf16 [hidden, ffn]
  DeviceBuffer attn_norm;  // f32 [hidden]
  DeviceBuffer ffn_norm;   // f32 [hidden]
  DeviceBuffer bqkv;       // f32 [q_dim + 2 kv_dim], empty without attention bias
};

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

  // Copies `w` to dst (bf16 rows of w.cols).
  Status Matrix(const WeightMatrix& w, uint16_t* dst) {
    if (!IsSupportedWeightType(w.dtype)) {
      return Status::Unsupported("cuda backend: weight type " + std::string(DTypeName(w.dtype)) +
                                 " cannot be uploaded");
    }
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

 private:
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

// Query tokens of one sequence processed together against its keys [kv_lo, kv_hi).
struct AttnTile {
  int32_t q_begin, q_count, q_pos0, kv_lo, kv_hi, bt_offset;
  bool decode;
};

// What a captured step depends on besides the (stable) buffers: everything that sizes a
// launch or places data in the step's metadata.
struct GraphKey {
  int64_t tokens, rows;
  int decode_items, prefill_items, max_chunks, decode_rpw;
  bool operator<(const GraphKey& o) const {
    return std::tie(tokens, rows, decode_items, prefill_items, max_chunks, decode_rpw) <
           std::tie(o.tokens, o.rows, o.decode_items, o.prefill_items, o.max_chunks, o.decode_rpw);
  }
};

struct GraphEntry {
  cudaGraphExec_t exec = nullptr;  // null: seen once, not captured yet
};

class CudaBackend final : public ForwardBackend {
 public:
  CudaBackend(const ModelConfig& config, const CudaBackendOptions& options)
      : config_(config), options_(options) {}
  ~CudaBackend() override {
    ClearGraphs();
    for (cudaEvent_t e : prof_events_) cudaEventDestroy(e);
    if (cublas_) cublasDestroy(cublas_);
    if (stream_) cudaStreamDestroy(stream_);
    if (meta_host_) cudaFreeHost(meta_host_);
    if (host_logits_) cudaFreeHost(host_logits_);
    if (sample_host_) cudaFreeHost(sample_host_);
    if (ids_host_) cudaFreeHost(ids_host_);
  }

  Status Init();
  Status Upload(const ModelWeights& weights);
  Status FillRandom(uint64_t seed);
  Status AllocateKv();

  const ModelConfig& config() const override { return config_; }
  int64_t num_kv_blocks() const override { return num_blocks_; }
  int64_t kv_block_size() const override { return options_.block_size; }
  uint64_t kv_bytes_per_block() const override { return BlockBytes() * config_.num_layers; }
  Status Forward(const ForwardBatch& batch, float* logits) override {
    return Run(batch, {}, logits, nullptr);
  }
  bool CanSample() const override { return true; }
  Status ForwardSample(const ForwardBatch& batch, std::span<const RowSampling> sampling,
                       float* logits, int32_t* ids) override;
  float* HostLogitsBuffer(size_t num_floats) override {
    if (num_floats > host_logits_cap_) {
      if (host_logits_) cudaFreeHost(host_logits_);
      const size_t cap = std::max(num_floats, host_logits_cap_ * 2);
      host_logits_cap_ = 0;
      if (cudaMallocHost(reinterpret_cast<void**>(&host_logits_), cap * sizeof(float)) !=
          cudaSuccess) {
        host_logits_ = nullptr;  // pageable memory then
        return nullptr;
      }
      host_logits_cap_ = cap;
    }
    return host_logits_;
  }
  std::string description() const override {
    return "cuda:" + std::to_string(options_.device) + " (" + device_name_ + ")";
  }

 private:
  uint64_t BlockBytes() const {  // one layer's K and V of one block
    return 2ull * config_.num_kv_heads * options_.block_size * config_.head_dim * 2;
  }
  int64_t QkvDim() const { return config_.q_dim() + 2 * config_.kv_dim(); }
  Status AllocateWeights();
  Status Validate(const ForwardBatch& batch) const;
  Status Prepare(const ForwardBatch& batch);
  Status EnsureScratch(int64_t tokens, int64_t rows, int64_t partials);
  // y[T, n] (f32) = x[T, k] (bf16) . w[n, k]^T (+ y when accumulate).
  Status RunStep(int64_t tokens, int64_t rows);  // every launch of a step, on stream_
  void ClearGraphs() {
    for (auto& [key, entry] : graphs_) {
      if (entry.exec) cudaGraphExecDestroy(entry.exec);
    }
    graphs_.clear();
  }
  Status Gemm(const DeviceBuffer& w, int64_t n, int64_t k, const void* x, int64_t tokens, float* y,
              bool accumulate);

  ModelConfig config_;
  CudaBackendOptions options_;
  std::string device_name_;
  int num_sms_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;

  DeviceBuffer embedding_;  // bf16 [vocab, hidden]
  DeviceBuffer lm_head_;    // bf16 [vocab, hidden]; empty when tied to the embedding
  std::vector<DeviceLayer> layers_;
  DeviceBuffer final_norm_;
  DeviceBuffer inv_freq_;

  int64_t num_blocks_ = 0;
  DeviceBuffer kv_;  // see kernels.h for the layout

  // Scratch, grown to the largest step seen.
  int64_t cap_tokens_ = 0, cap_rows_ = 0, cap_partials_ = 0;
  DeviceBuffer x_, xn_, qkv_, q_, attn_, gate_up_, act_, logits_, part_acc_, part_ml_;
  DeviceBuffer tmp_;              // unfused baseline: GEMM output before the residual add
  float* host_logits_ = nullptr;  // pinned, lent to the engine (HostLogitsBuffer)
  size_t host_logits_cap_ = 0;
  // Device sampling: per-row parameters and the drawn ids, pinned on the host and on the device.
  cuda::DeviceSampling* sample_host_ = nullptr;
  int32_t* ids_host_ = nullptr;
  size_t sample_cap_ = 0;
  DeviceBuffer sample_dev_, ids_dev_;
  Status Run(const ForwardBatch& batch, std::span<const RowSampling> sampling, float* logits,
             int32_t* ids);
  Status EnsureSampleBuffers(size_t rows);

  // Step metadata: built in pinned host memory, uploaded with one copy.
  int32_t* meta_host_ = nullptr;
  size_t meta_cap_ = 0;  // int32 elements
  DeviceBuffer meta_dev_;
  std::vector<int32_t> meta_;
  std::vector<AttnItem> items_;
  std::vector<int32_t> chunk_scratch_;
  std::vector<AttnTile> tiles_;
  // Offsets (int32 elements) of the parts of the metadata, and step shape.
  size_t off_ids_ = 0, off_pos_ = 0, off_slots_ = 0, off_chunks_ = 0, off_rows_ = 0,
         off_tables_ = 0, off_items_ = 0;
  int num_decode_items_ = 0, num_prefill_items_ = 0, max_chunks_ = 1;
  int decode_rpw_ = 1;

  // Profiling (options_.profile): an event after each launch group of a step.
  void Mark(const char* label) {
    if (!options_.profile) return;
    if (prof_n_ == prof_events_.size()) {
      cudaEvent_t e = nullptr;
      if (cudaEventCreate(&e) != cudaSuccess) return;
      prof_events_.push_back(e);
      prof_labels_.push_back(label);
    }
    prof_labels_[prof_n_] = label;
    cudaEventRecord(prof_events_[prof_n_++], stream_);
  }
  void CollectProfile() {
    for (size_t i = 1; i < prof_n_; ++i) {
      float ms = 0;
      cudaEventElapsedTime(&ms, prof_events_[i - 1], prof_events_[i]);
      prof_ms_[prof_labels_[i]] += ms;
    }
    ++prof_steps_;
  }

 public:
  std::string ProfileReport() {
    std::string out;
    double total = 0;
    for (const auto& [label, ms] : prof_ms_) total += ms;
    char line[128];
    for (const auto& [label, ms] : prof_ms_) {
      std::snprintf(line, sizeof line, "  %-14s %8.3f ms/step %5.1f%%\n", label.c_str(),
                    ms / std::max<int64_t>(1, prof_steps_), 100 * ms / std::max(total, 1e-9));
      out += line;
    }
    prof_ms_.clear();
    prof_steps_ = 0;
    return out;
  }

 private:
  std::vector<cudaEvent_t> prof_events_;
  std::vector<const char*> prof_labels_;
  size_t prof_n_ = 0;
  std::map<std::string, double> prof_ms_;
  int64_t prof_steps_ = 0;

  DeviceBuffer cublas_workspace_;  // fixed, so that captured GEMMs never allocate
  std::map<GraphKey, GraphEntry> graphs_;
};

Status CudaBackend::Init() {
  const ModelConfig& c = config_;
  JISU_RETURN_IF_ERROR(c.Validate());
  if (options_.block_size < 1 || options_.block_size > 1024) {
    return Status::InvalidArgument("cuda backend: block size must be in [1, 1024]");
  }
  if (!cuda::AttentionSupportsHeadDim(static_cast<int>(c.head_dim))) {
    return Status::Unsupported("cuda backend: head_dim " + std::to_string(c.head_dim) +
                               " is not supported (32, 64, 128)");
  }
  if (c.num_heads / c.num_kv_heads > cuda::AttentionRows(16)) {
    return Status::Unsupported("cuda backend: more than 64 query heads per KV head");
  }
  JISU_CUDA_RETURN(cudaSetDevice(options_.device));
  cudaDeviceProp prop{};
  JISU_CUDA_RETURN(cudaGetDeviceProperties(&prop, options_.device));
  device_name_ = prop.name;
  num_sms_ = prop.multiProcessorCount;
  JISU_CUDA_RETURN(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  if (cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS) {
    return Status::Internal("cuda backend: cublasCreate failed");
  }
  cublasSetStream(cublas_, stream_);
  JISU_RETURN_IF_ERROR(cublas_workspace_.Resize(32 << 20));
  if (cublasSetWorkspace(cublas_, cublas_workspace_.get(), cublas_workspace_.size()) !=
      CUBLAS_STATUS_SUCCESS) {
    return Status::Internal("cuda backend: cublasSetWorkspace failed");
  }
  return AllocateWeights();
}

Status CudaBackend::AllocateWeights() {
  const ModelConfig& c = config_;
  const uint64_t h = c.hidden_size, f = c.intermediate_size;
  JISU_RETURN_IF_ERROR(embedding_.Resize(c.vocab_size * h * 2));
  if (!c.tie_word_embeddings) JISU_RETURN_IF_ERROR(lm_head_.Resize(c.vocab_size * h * 2));
  layers_.resize(c.num_layers);
  for (DeviceLayer& l : layers_) {
    JISU_RETURN_IF_ERROR(l.wqkv.Resize(QkvDim() * h * 2));
    JISU_RETURN_IF_ERROR(l.wo.Resize(h * c.q_dim() * 2));
    JISU_RETURN_IF_ERROR(l.w_gate_up.Resize(2 * f * h * 2));
    JISU_RETURN_IF_ERROR(l.w_down.Resize(h * f * 2));
    JISU_RETURN_IF_ERROR(l.attn_norm.Resize(h * 4));
    JISU_RETURN_IF_ERROR(l.ffn_norm.Resize(h * 4));
  }
  JISU_RETURN_IF_ERROR(final_norm_.Resize(h * 4));
  return Status::Ok();
}

Status CudaBackend::Upload(const ModelWeights& w) {
  const ModelConfig& c = config_;
  const int64_t h = c.hidden_size;
  WeightUploader up(stream_);
  JISU_RETURN_IF_ERROR(up.Init());
  JISU_RETURN_IF_ERROR(up.Matrix(w.embedding, embedding_.as<uint16_t>()));
  // Tied heads are the embedding matrix itself (same host view): share the device copy.
  const bool tied = w.lm_head.data == w.embedding.data;
  if (!tied) {
    JISU_RETURN_IF_ERROR(lm_head_.Resize(c.vocab_size * h * 2));
    JISU_RETURN_IF_ERROR(up.Matrix(w.lm_head, lm_head_.as<uint16_t>()));
  } else {
    lm_head_.Reset();
  }
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const LayerWeights& src = w.layers[i];
    DeviceLayer& dst = layers_[i];
    uint16_t* qkv = dst.wqkv.as<uint16_t>();
    JISU_RETURN_IF_ERROR(up.Matrix(src.wq, qkv));
    JISU_RETURN_IF_ERROR(up.Matrix(src.wk, qkv + c.q_dim() * h));
    JISU_RETURN_IF_ERROR(up.Matrix(src.wv, qkv + (c.q_dim() + c.kv_dim()) * h));
    JISU_RETURN_IF_ERROR(up.Matrix(src.wo, dst.wo.as<uint16_t>()));
    uint16_t* gu = dst.w_gate_up.as<uint16_t>();
    JISU_RETURN_IF_ERROR(up.Matrix(src.w_gate, gu));
    JISU_RETURN_IF_ERROR(up.Matrix(src.w_up, gu + c.intermediate_size * h));
    JISU_RETURN_IF_ERROR(up.Matrix(src.w_down, dst.w_down.as<uint16_t>()));
    JISU_RETURN_IF_ERROR(UploadFloats(src.attn_norm, dst.attn_norm));
    JISU_RETURN_IF_ERROR(UploadFloats(src.ffn_norm, dst.ffn_norm));
    if (c.attention_bias) {
      std::vector<float> b = src.bq;
      b.insert(b.end(), src.bk.begin(), src.bk.end());
      b.insert(b.end(), src.bv.begin(), src.bv.end());
      JISU_RETURN_IF_ERROR(UploadFloats(b, dst.bqkv));
    }
  }
  JISU_RETURN_IF_ERROR(UploadFloats(w.final_norm, final_norm_));
  std::vector<float> inv_freq = RopeInverseFrequencies(c);
  if (w.rope_freq_factors) {
    for (size_t i = 0; i < inv_freq.size(); ++i) inv_freq[i] /= (*w.rope_freq_factors)[i];
  }
  JISU_RETURN_IF_ERROR(UploadFloats(inv_freq, inv_freq_));
  JISU_CUDA_RETURN(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

Status CudaBackend::FillRandom(uint64_t seed) {
  const ModelConfig& c = config_;
  const int64_t h = c.hidden_size;
  // Uniform(+-s) with s = sqrt(3 / fan_in) keeps each projection's output variance at that of
  // its input, so activations stay finite through all layers.
  auto fill = [&](DeviceBuffer& b, int64_t fan_in, uint64_t salt) {
    cuda::LaunchFillRandomBf16(b.as<uint16_t>(), b.size() / 2,
                               std::sqrt(3.0f / static_cast<float>(fan_in)), seed * 1000003 + salt,
                               stream_);
  };
  fill(embedding_, 3, 1);
  if (lm_head_.size()) fill(lm_head_, h, 2);
  uint64_t salt = 10;
  for (DeviceLayer& l : layers_) {
    fill(l.wqkv, h, salt++);
    fill(l.wo, c.q_dim(), salt++);
    fill(l.w_gate_up, h, salt++);
    fill(l.w_down, c.intermediate_size, salt++);
    cuda::LaunchFillF32(l.attn_norm.as<float>(), h, 1.0f, stream_);
    cuda::LaunchFillF32(l.ffn_norm.as<float>(), h, 1.0f, stream_);
    if (c.attention_bias) {
      JISU_RETURN_IF_ERROR(l.bqkv.Resize(QkvDim() * 4));
      cuda::LaunchFillF32(l.bqkv.as<float>(), QkvDim(), 0.0f, stream_);
    }
  }
  cuda::LaunchFillF32(final_norm_.as<float>(), h, 1.0f, stream_);
  JISU_RETURN_IF_ERROR(UploadFloats(RopeInverseFrequencies(c), inv_freq_));
  JISU_CUDA_RETURN(cudaGetLastError());
  JISU_CUDA_RETURN(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

Status CudaBackend::AllocateKv() {
  size_t free_bytes = 0, total_bytes = 0;
  JISU_CUDA_RETURN(cudaMemGetInfo(&free_bytes, &total_bytes));
  uint64_t budget = options_.kv_bytes;
  if (budget == 0) {
    if (!(options_.kv_fraction > 0 && options_.kv_fraction <= 1)) {
      return Status::InvalidArgument("cuda backend: kv_fraction must be in (0, 1]");
    }
    budget = static_cast<uint64_t>(options_.kv_fraction * static_cast<double>(free_bytes));
  }
  int64_t blocks = static_cast<int64_t>(budget / kv_bytes_per_block());
  if (options_.max_kv_blocks > 0) blocks = std::min(blocks, options_.max_kv_blocks);
  if (blocks < 1) {
    return Status::ResourceExhausted("cuda backend: the KV budget holds no block (" +
                                     std::to_string(kv_bytes_per_block()) + " bytes each, " +
                                     std::to_string(free_bytes >> 20) + " MiB free)");
  }
  num_blocks_ = blocks;
  JISU_RETURN_IF_ERROR(kv_.Resize(static_cast<uint64_t>(blocks) * kv_bytes_per_block()));
  // Zeros, not garbage: a bug that reads an unwritten slot then shows as wrong numbers, not NaN.
  JISU_CUDA_RETURN(cudaMemsetAsync(kv_.get(), 0, kv_.size(), stream_));
  JISU_CUDA_RETURN(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

Status CudaBackend::Validate(const ForwardBatch& batch) const {
  JISU_RETURN_IF_ERROR(ValidateForwardBatch(batch, config_.max_position, config_.vocab_size,
                                            options_.block_size, num_blocks_));
  if (batch.num_tokens() > (int64_t{1} << 30)) {
    return Status::InvalidArgument("batch: too many tokens");
  }
  return Status::Ok();
}

// Builds the step's metadata: per token its id, position, cache slot and attention chunk
// count; the logits rows; the block tables; and the attention work items (decode items first,
// then prefill tiles), all in one pinned buffer uploaded with one copy.
Status CudaBackend::Prepare(const ForwardBatch& batch) {
  const int64_t T = batch.num_tokens();
  const int64_t bs = options_.block_size;
  const int group = static_cast<int>(config_.num_heads / config_.num_kv_heads);
  const int window = config_.sliding_window ? static_cast<int>(*config_.sliding_window) : 0;
  decode_rpw_ = 1;
  while (cuda::AttentionRows(decode_rpw_) < group) decode_rpw_ *= 2;
  const int prefill_tile = cuda::AttentionRows(16) / group;  // tokens per prefill tile

  // Tiles first (to choose the chunk size), then chunks.
  std::vector<AttnTile>& tiles = tiles_;
  tiles.clear();
  int64_t table_len = 0;
  int64_t max_range = 0;
  {
    int64_t t = 0;
    for (const BatchSequence& s : batch.sequences) {
      const int64_t used = BlocksForTokens(s.start_position + s.num_tokens, bs);
      const bool decode = s.num_tokens == 1;
      const int64_t step = decode ? 1 : prefill_tile;
      for (int64_t i = 0; i < s.num_tokens; i += step) {
        AttnTile tile;
        tile.q_begin = static_cast<int32_t>(t + i);
        tile.q_count = static_cast<int32_t>(std::min(step, s.num_tokens - i));
        tile.q_pos0 = static_cast<int32_t>(s.start_position + i);
        tile.kv_hi = tile.q_pos0 + tile.q_count;
        tile.kv_lo = window > 0 ? std::max(0, tile.q_pos0 - window + 1) : 0;
        tile.bt_offset = static_cast<int32_t>(table_len);
        tile.decode = decode;
        max_range = std::max<int64_t>(max_range, tile.kv_hi - tile.kv_lo);
        tiles.push_back(tile);
      }
      t += s.num_tokens;
      table_len += used;
    }
  }
  int64_t chunk = options_.attention_chunk_tokens;
  if (chunk <= 0) {
    // Split keys only when the tiles alone leave SMs idle (small batches, long contexts).
    const int64_t base = static_cast<int64_t>(tiles.size()) * config_.num_kv_heads;
    const int64_t want = (4 * num_sms_ + base - 1) / std::max<int64_t>(1, base);
    chunk = want <= 1 ? max_range : std::max<int64_t>(128, (max_range + want - 1) / want);
    chunk = std::max<int64_t>(1, chunk);
  }

  items_.clear();
  std::vector<int32_t>& chunks_of_token = chunk_scratch_;
  chunks_of_token.assign(T, 1);
  max_chunks_ = 1;
  num_decode_items_ = num_prefill_items_ = 0;
  for (int pass = 0; pass < 2; ++pass) {  // decode items, then prefill items
    for (const AttnTile& tile : tiles) {
      if (tile.decode != (pass == 0)) continue;
      const int64_t range = tile.kv_hi - tile.kv_lo;
      const int32_t n = static_cast<int32_t>((range + chunk - 1) / chunk);
      max_chunks_ = std::max(max_chunks_, static_cast<int>(n));
      for (int32_t c = 0; c < n; ++c) {
        AttnItem it;
        it.q_begin = tile.q_begin;
        it.q_count = tile.q_count;
        it.q_pos0 = tile.q_pos0;
        it.kv_begin = static_cast<int32_t>(tile.kv_lo + c * chunk);
        it.kv_end =
            static_cast<int32_t>(std::min<int64_t>(tile.kv_hi, tile.kv_lo + (c + 1) * chunk));
        it.bt_offset = tile.bt_offset;
        it.chunk = c;
        it.num_chunks = n;
        items_.push_back(it);
      }
      for (int32_t i = 0; i < tile.q_count; ++i) chunks_of_token[tile.q_begin + i] = n;
      (pass == 0 ? num_decode_items_ : num_prefill_items_) += n;
    }
  }

  const int64_t R = static_cast<int64_t>(batch.logits_rows.size());
  off_ids_ = 0;
  off_pos_ = off_ids_ + T;
  off_slots_ = off_pos_ + T;
  off_chunks_ = off_slots_ + T;
  off_rows_ = off_chunks_ + T;
  // Items before the block tables, so that every offset depends only on the graph key.
  off_items_ = (off_rows_ + R + 3) / 4 * 4;  // 16-byte aligned items
  off_tables_ = off_items_ + items_.size() * (sizeof(AttnItem) / 4);
  const size_t total = off_tables_ + table_len;
  if (total > meta_cap_) {
    if (meta_host_) cudaFreeHost(meta_host_);
    meta_host_ = nullptr;
    meta_cap_ = std::max(total, meta_cap_ * 2);
    JISU_CUDA_RETURN(cudaMallocHost(reinterpret_cast<void**>(&meta_host_), meta_cap_ * 4));
    JISU_RETURN_IF_ERROR(meta_dev_.Resize(meta_cap_ * 4));
    ClearGraphs();  // they point into the old buffer
  }
  int32_t* m = meta_host_;
  {
    int64_t t = 0;
    int64_t table = 0;
    for (const BatchSequence& s : batch.sequences) {
      for (int64_t i = 0; i < s.num_tokens; ++i, ++t) {
        const int64_t pos = s.start_position + i;
        m[off_ids_ + t] = batch.token_ids[t];
        m[off_pos_ + t] = static_cast<int32_t>(pos);
        m[off_slots_ + t] = static_cast<int32_t>(s.block_table[pos / bs] * bs + pos % bs);
      }
      const int64_t used = BlocksForTokens(s.start_position + s.num_tokens, bs);
      std::memcpy(m + off_tables_ + table, s.block_table.data(), used * 4);
      table += used;
    }
  }
  std::memcpy(m + off_chunks_, chunks_of_token.data(), T * 4);
  for (int64_t r = 0; r < R; ++r) m[off_rows_ + r] = static_cast<int32_t>(batch.logits_rows[r]);
  std::memcpy(m + off_items_, items_.data(), items_.size() * sizeof(AttnItem));
  JISU_CUDA_RETURN(cudaMemcpyAsync(meta_dev_.get(), m, total * 4, cudaMemcpyHostToDevice, stream_));
  return Status::Ok();
}

Status CudaBackend::EnsureScratch(int64_t tokens, int64_t rows, int64_t partials) {
  const ModelConfig& c = config_;
  if (tokens > cap_tokens_ || rows > cap_rows_ || partials > cap_partials_) ClearGraphs();
  if (tokens > cap_tokens_) {
    const int64_t t = std::max(tokens, cap_tokens_ * 2);
    JISU_RETURN_IF_ERROR(x_.Resize(t * c.hidden_size * 4));
    JISU_RETURN_IF_ERROR(xn_.Resize(t * c.hidden_size * 2));
    JISU_RETURN_IF_ERROR(qkv_.Resize(t * QkvDim() * 4));
    JISU_RETURN_IF_ERROR(q_.Resize(t * c.q_dim() * 4));
    JISU_RETURN_IF_ERROR(attn_.Resize(t * c.q_dim() * 2));
    JISU_RETURN_IF_ERROR(gate_up_.Resize(t * 2 * c.intermediate_size * 4));
    JISU_RETURN_IF_ERROR(act_.Resize(t * c.intermediate_size * 2));
    if (!options_.fused_kernels) JISU_RETURN_IF_ERROR(tmp_.Resize(t * c.hidden_size * 4));
    cap_tokens_ = t;
  }
  if (rows > cap_rows_) {
    const int64_t r = std::max(rows, cap_rows_ * 2);
    JISU_RETURN_IF_ERROR(logits_.Resize(r * c.vocab_size * 4));
    cap_rows_ = r;
  }
  if (partials > cap_partials_) {
    const int64_t p = std::max(partials, cap_partials_ * 2);
    JISU_RETURN_IF_ERROR(part_acc_.Resize(p * c.head_dim * 4));
    JISU_RETURN_IF_ERROR(part_ml_.Resize(p * 2 * 4));
    cap_partials_ = p;
  }
  return Status::Ok();
}

Status CudaBackend::Gemm(const DeviceBuffer& w, int64_t n, int64_t k, const void* x, int64_t tokens,
                         float* y, bool accumulate) {
  // Row-major y[T, n] = x[T, k] w[n, k]^T is column-major y^T[n, T] = w^T x^T, with w stored
  // column-major as [k, n].
  if (options_.small_batch_gemv && tokens <= cuda::kMaxGemvTokens &&
      cuda::LaunchGemv(w.as<uint16_t>(), static_cast<int>(n), static_cast<int>(k),
                       static_cast<const uint16_t*>(x), static_cast<int>(tokens), y, accumulate,
                       stream_)) {
    return Status::Ok();
  }
  const float alpha = 1.0f;
  const float beta = accumulate ? 1.0f : 0.0f;
  const cublasStatus_t st =
      cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(tokens),
                   static_cast<int>(k), &alpha, w.get(), CUDA_R_16BF, static_cast<int>(k), x,
                   CUDA_R_16BF, static_cast<int>(k), &beta, y, CUDA_R_32F, static_cast<int>(n),
                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    return Status::Internal("cuda backend: cublasGemmEx failed (" + std::to_string(st) + ")");
  }
  return Status::Ok();
}

Status CudaBackend::EnsureSampleBuffers(size_t rows) {
  if (rows <= sample_cap_) return Status::Ok();
  const size_t cap = std::max(rows, sample_cap_ * 2);
  if (sample_host_) cudaFreeHost(sample_host_);
  if (ids_host_) cudaFreeHost(ids_host_);
  sample_host_ = nullptr;
  ids_host_ = nullptr;
  sample_cap_ = 0;
  JISU_CUDA_RETURN(
      cudaMallocHost(reinterpret_cast<void**>(&sample_host_), cap * sizeof(cuda::DeviceSampling)));
  JISU_CUDA_RETURN(cudaMallocHost(reinterpret_cast<void**>(&ids_host_), cap * sizeof(int32_t)));
  JISU_RETURN_IF_ERROR(sample_dev_.Resize(cap * sizeof(cuda::DeviceSampling)));
  JISU_RETURN_IF_ERROR(ids_dev_.Resize(cap * sizeof(int32_t)));
  sample_cap_ = cap;
  return Status::Ok();
}

Status CudaBackend::ForwardSample(const ForwardBatch& batch, std::span<const RowSampling> sampling,
                                  float* logits, int32_t* ids) {
  if (sampling.size() != batch.logits_rows.size()) {
    return Status::InvalidArgument("cuda backend: one sampling entry per logits row expected");
  }
  for (const RowSampling& r : sampling) {
    if (!r.on_device) continue;
    if (!(r.temperature >= 0.0f) || !std::isfinite(r.temperature) || !(r.top_p > 0.0f) ||
        r.top_p > 1.0f || !(r.min_p >= 0.0f) || r.min_p > 1.0f || r.top_k < 0 || !(r.u >= 0.0) ||
        r.u >= 1.0) {
      return Status::InvalidArgument("cuda backend: bad device sampling parameters");
    }
  }
  return Run(batch, sampling, logits, ids);
}

Status CudaBackend::Run(const ForwardBatch& batch, std::span<const RowSampling> sampling,
                        float* logits, int32_t* ids) {
  JISU_RETURN_IF_ERROR(Validate(batch));
  const int64_t T = batch.num_tokens();
  if (T == 0) return Status::Ok();
  JISU_CUDA_RETURN(cudaSetDevice(options_.device));
  JISU_RETURN_IF_ERROR(Prepare(batch));
  const int64_t R = static_cast<int64_t>(batch.logits_rows.size());
  // Logits rows may repeat a token (the final norm writes R rows of xn_): size for both.
  JISU_RETURN_IF_ERROR(EnsureScratch(std::max(T, R), std::max<int64_t>(R, 1),
                                     max_chunks_ > 1 ? T * config_.num_heads * max_chunks_ : 0));
  const bool graph = options_.cuda_graphs && !options_.profile && T <= 512;
  GraphEntry* entry = nullptr;
  if (graph) {
    if (graphs_.size() >= 256) ClearGraphs();  // shapes churn (prefill chunk sizes): start over
    const GraphKey key{T, R, num_decode_items_, num_prefill_items_, max_chunks_, decode_rpw_};
    auto [pos, inserted] = graphs_.try_emplace(key);
    if (!inserted) entry = &pos->second;
  }
  if (entry && !entry->exec) {
    // Second sighting of this shape: capture. Kernel attributes and cuBLAS heuristics were set
    // up by the eager first run.
    JISU_CUDA_RETURN(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    const Status st = RunStep(T, R);
    cudaGraph_t g = nullptr;
    const cudaError_t end = cudaStreamEndCapture(stream_, &g);
    JISU_RETURN_IF_ERROR(st);
    JISU_CUDA_RETURN(end);
    const cudaError_t inst = cudaGraphInstantiate(&entry->exec, g, 0);
    cudaGraphDestroy(g);
    JISU_CUDA_RETURN(inst);
  }
  if (entry && entry->exec) {
    JISU_CUDA_RETURN(cudaGraphLaunch(entry->exec, stream_));
  } else {
    JISU_RETURN_IF_ERROR(RunStep(T, R));
  }
  const int64_t vocab = config_.vocab_size;
  int num_device = 0;
  if (R > 0 && sampling.empty()) {
    JISU_CUDA_RETURN(
        cudaMemcpyAsync(logits, logits_.get(), R * vocab * 4, cudaMemcpyDeviceToHost, stream_));
  } else if (R > 0) {
    JISU_RETURN_IF_ERROR(EnsureSampleBuffers(static_cast<size_t>(R)));
    for (int64_t r = 0; r < R; ++r) {
      const RowSampling& rs = sampling[r];
      if (!rs.on_device) continue;
      cuda::DeviceSampling& d = sample_host_[num_device++];
      d.row = static_cast<int32_t>(r);
      d.temperature = rs.temperature;
      d.top_k = rs.top_k;
      d.top_p = rs.top_p;
      d.min_p = rs.min_p;
      d.u = rs.u;
    }
    if (num_device > 0) {
      JISU_CUDA_RETURN(cudaMemcpyAsync(sample_dev_.get(), sample_host_,
                                       num_device * sizeof(cuda::DeviceSampling),
                                       cudaMemcpyHostToDevice, stream_));
      cuda::LaunchSampleRows(logits_.as<float>(), static_cast<int>(vocab),
                             sample_dev_.as<cuda::DeviceSampling>(), num_device,
                             ids_dev_.as<int32_t>(), stream_);
      JISU_CUDA_RETURN(cudaMemcpyAsync(ids_host_, ids_dev_.get(), num_device * sizeof(int32_t),
                                       cudaMemcpyDeviceToHost, stream_));
    }
    // Host rows' logits, consecutive rows in one copy.
    for (int64_t r = 0; r < R;) {
      if (sampling[r].on_device) {
        ++r;
        continue;
      }
      int64_t e = r;
      while (e < R && !sampling[e].on_device) ++e;
      JISU_CUDA_RETURN(cudaMemcpyAsync(logits + r * vocab, logits_.as<float>() + r * vocab,
                                       (e - r) * vocab * 4, cudaMemcpyDeviceToHost, stream_));
      r = e;
    }
  }
  JISU_CUDA_RETURN(cudaGetLastError());
  JISU_CUDA_RETURN(cudaStreamSynchronize(stream_));
  for (int64_t r = 0, j = 0; r < R && num_device > 0; ++r) {
    if (sampling[r].on_device) ids[r] = ids_host_[j++];
  }
  if (options_.profile) CollectProfile();
  return Status::Ok();
}

Status CudaBackend::RunStep(int64_t T, int64_t R) {
  prof_n_ = 0;
  Mark("start");
  const ModelConfig& c = config_;
  const int hidden = static_cast<int>(c.hidden_size);
  const int32_t* meta = meta_dev_.as<int32_t>();
  cudaStream_t s = stream_;
  cuda::LaunchEmbed(embedding_.as<uint16_t>(), meta + off_ids_, static_cast<int>(T), hidden,
                    x_.as<float>(), s);
  Mark("embed");

  cuda::AttnArgs attn;
  attn.q = q_.as<float>();
  attn.block_tables = meta + off_tables_;
  attn.heads = static_cast<int>(c.num_heads);
  attn.kv_heads = static_cast<int>(c.num_kv_heads);
  attn.head_dim = static_cast<int>(c.head_dim);
  attn.block_size = static_cast<int>(options_.block_size);
  attn.sliding_window = c.sliding_window ? static_cast<int>(*c.sliding_window) : 0;
  attn.out = attn_.as<uint16_t>();
  attn.part_acc = part_acc_.as<float>();
  attn.part_ml = part_ml_.as<float>();
  attn.max_chunks = max_chunks_;
  attn.flash = options_.flash_attention;
  const bool fused = options_.fused_kernels;
  const int T32 = static_cast<int>(T);
  // Residual adds: in the GEMM epilogue (fused) or GEMM into tmp_, then an add kernel.
  auto residual_gemm = [&](const DeviceBuffer& w, int64_t n, int64_t k, const void* x) -> Status {
    if (fused) return Gemm(w, n, k, x, T, x_.as<float>(), true);
    JISU_RETURN_IF_ERROR(Gemm(w, n, k, x, T, tmp_.as<float>(), false));
    cuda::LaunchAdd(x_.as<float>(), tmp_.as<float>(), static_cast<size_t>(T) * n, s);
    return Status::Ok();
  };
  const auto* items = reinterpret_cast<const AttnItem*>(meta + off_items_);
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const uint64_t layer_kv = static_cast<uint64_t>(num_blocks_) * BlockBytes() / 2;  // elements

  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    DeviceLayer& w = layers_[layer];
    uint16_t* kv = kv_.as<uint16_t>() + layer * layer_kv;
    cuda::LaunchRmsNorm(x_.as<float>(), nullptr, static_cast<int>(T), hidden,
                        w.attn_norm.as<float>(), c.rms_norm_eps, xn_.as<uint16_t>(), s);
    Mark("rmsnorm");
    JISU_RETURN_IF_ERROR(Gemm(w.wqkv, QkvDim(), hidden, xn_.get(), T, qkv_.as<float>(), false));
    Mark("gemm_qkv");
    const bool interleaved = c.rope_style == RopeStyle::kInterleaved;
    if (fused) {
      cuda::LaunchQkvRope(qkv_.as<float>(), w.bqkv.size() ? w.bqkv.as<float>() : nullptr,
                          meta + off_pos_, meta + off_slots_, T32, attn.heads, attn.kv_heads,
                          attn.head_dim, inv_freq_.as<float>(), interleaved, q_scale,
                          q_.as<float>(), kv, attn.block_size, s);
    } else {
      const int qkv_dim = static_cast<int>(QkvDim());
      if (w.bqkv.size()) {
        cuda::LaunchAddBias(qkv_.as<float>(), w.bqkv.as<float>(), T32, qkv_dim, qkv_dim, s);
      }
      cuda::LaunchRopeInPlace(qkv_.as<float>(), meta + off_pos_, T32, attn.heads, attn.kv_heads,
                              attn.head_dim, inv_freq_.as<float>(), interleaved, s);
      cuda::LaunchSplitQkvToCache(qkv_.as<float>(), meta + off_slots_, T32, attn.heads,
                                  attn.kv_heads, attn.head_dim, q_scale, q_.as<float>(), kv,
                                  attn.block_size, s);
    }
    Mark("qkv_rope_kv");
    attn.kv = kv;
    attn.items = items;
    attn.num_items = num_decode_items_;
    attn.rows_per_warp = decode_rpw_;
    cuda::LaunchAttention(attn, s);
    Mark("attn_decode");
    attn.items = items + num_decode_items_;
    attn.num_items = num_prefill_items_;
    attn.rows_per_warp = 16;
    cuda::LaunchAttention(attn, s);
    Mark("attn_prefill");
    if (max_chunks_ > 1) {
      cuda::LaunchAttentionCombine(attn, meta + off_chunks_, static_cast<int>(T), s);
      Mark("attn_combine");
    }
    JISU_RETURN_IF_ERROR(residual_gemm(w.wo, hidden, c.q_dim(), attn_.get()));
    Mark("gemm_o");
    cuda::LaunchRmsNorm(x_.as<float>(), nullptr, static_cast<int>(T), hidden,
                        w.ffn_norm.as<float>(), c.rms_norm_eps, xn_.as<uint16_t>(), s);
    Mark("rmsnorm");
    JISU_RETURN_IF_ERROR(Gemm(w.w_gate_up, 2 * c.intermediate_size, hidden, xn_.get(), T,
                              gate_up_.as<float>(), false));
    Mark("gemm_gate_up");
    const int ffn = static_cast<int>(c.intermediate_size);
    if (fused) {
      cuda::LaunchSiluMul(gate_up_.as<float>(), T32, ffn, act_.as<uint16_t>(), s);
    } else {
      cuda::LaunchSiluInPlace(gate_up_.as<float>(), T32, ffn, s);
      cuda::LaunchMulToBf16(gate_up_.as<float>(), T32, ffn, act_.as<uint16_t>(), s);
    }
    Mark("silu_mul");
    JISU_RETURN_IF_ERROR(residual_gemm(w.w_down, hidden, c.intermediate_size, act_.get()));
    Mark("gemm_down");
  }
  if (R > 0) {
    cuda::LaunchRmsNorm(x_.as<float>(), meta + off_rows_, static_cast<int>(R), hidden,
                        final_norm_.as<float>(), c.rms_norm_eps, xn_.as<uint16_t>(), s);
    Mark("rmsnorm");
    const DeviceBuffer& head = lm_head_.size() ? lm_head_ : embedding_;
    JISU_RETURN_IF_ERROR(
        Gemm(head, c.vocab_size, hidden, xn_.get(), R, logits_.as<float>(), false));
    Mark("gemm_lm_head");
  }
  return Status::Ok();
}

Result<std::unique_ptr<ForwardBackend>> Finish(std::unique_ptr<CudaBackend> backend) {
  JISU_RETURN_IF_ERROR(backend->AllocateKv());
  return std::unique_ptr<ForwardBackend>(std::move(backend));
}

}  // namespace

bool CudaDeviceAvailable(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why) *why = std::string("no usable CUDA driver or device: ") + cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device";
    return false;
  }
  return true;
}

Result<std::unique_ptr<ForwardBackend>> CreateCudaBackend(const Model& model,
                                                          const CudaBackendOptions& options) {
  if (!model.has_weights())
    return Status::InvalidArgument("cuda backend: the model has no weights");
  std::string why;
  if (!CudaDeviceAvailable(&why)) return Status::Unsupported("cuda backend: " + why);
  auto backend = std::make_unique<CudaBackend>(model.config(), options);
  JISU_RETURN_IF_ERROR(backend->Init());
  JISU_RETURN_IF_ERROR(backend->Upload(model.weights()));
  return Finish(std::move(backend));
}

Result<std::unique_ptr<ForwardBackend>> CreateCudaBackendRandom(const ModelConfig& config,
                                                                const CudaBackendOptions& options,
                                                                uint64_t seed) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) return Status::Unsupported("cuda backend: " + why);
  auto backend = std::make_unique<CudaBackend>(config, options);
  JISU_RETURN_IF_ERROR(backend->Init());
  JISU_RETURN_IF_ERROR(backend->FillRandom(seed));
  return Finish(std::move(backend));
}

std::string CudaProfileReport(ForwardBackend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  return cuda ? cuda->ProfileReport() : std::string();
}

Result<double> MeasureCudaCopyBandwidth(int device, uint64_t bytes) {
  JISU_CUDA_RETURN(cudaSetDevice(device));
  DeviceBuffer a, b;
  JISU_RETURN_IF_ERROR(a.Resize(bytes));
  JISU_RETURN_IF_ERROR(b.Resize(bytes));
  JISU_CUDA_RETURN(cudaMemset(a.get(), 1, bytes));
  cudaEvent_t start, stop;
  JISU_CUDA_RETURN(cudaEventCreate(&start));
  JISU_CUDA_RETURN(cudaEventCreate(&stop));
  constexpr int kWarmup = 3, kRuns = 20;
  for (int i = 0; i < kWarmup; ++i) cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice);
  cudaEventRecord(start);
  for (int i = 0; i < kRuns; ++i)
    cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice);
  cudaEventRecord(stop);
  JISU_CUDA_RETURN(cudaEventSynchronize(stop));
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 2.0 * static_cast<double>(bytes) * kRuns / (ms * 1e-3);
}

}  // namespace jisu
