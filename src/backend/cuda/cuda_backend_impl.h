// The CUDA backend's class, shared by its implementation files (cuda_backend.cc: setup and the
// step; cuda_sampling_step.cc: the draw on the device and the host rows' logits; cuda_weights.cc:
// weight upload; cuda_step_meta.cc: the step's metadata and attention work items). Not part of the
// public interface (backend/cuda/cuda_backend.h).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_program.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/device_weight.h"
#include "backend/cuda/gemm_tuner.h"
#include "backend/cuda/kernels.h"
#include "model/layer_program.h"

namespace jisu::cuda_detail {

using cuda::AttnItem;

// Device copies of one layer's weights. Q/K/V and gate/up are fused into one matrix each so
// that one GEMM reads the activations once.
struct DeviceLayer {
  DeviceWeight wqkv;            // [q_dim + 2 kv_dim, hidden]
  DeviceWeight wo;              // [hidden, q_dim]
  DeviceWeight w_gate_up;       // [2 ffn, hidden]
  DeviceWeight w_down;          // [hidden, ffn]
  DeviceBuffer attn_norm;       // f32 [hidden]
  DeviceBuffer ffn_norm;        // f32 [hidden]
  DeviceBuffer bqkv;            // f32 [q_dim + 2 kv_dim], empty without attention bias
  DeviceBuffer q_norm;          // f32 [head_dim], empty without QK-norm
  DeviceBuffer k_norm;          // f32 [head_dim]
  DeviceBuffer post_attn_norm;  // f32 [hidden], empty without post norms (Gemma)
  DeviceBuffer post_ffn_norm;   // f32 [hidden]

  // The hidden-sized norm weight `id` (WeightId::kAttnNorm, ...).
  const DeviceBuffer& Norm(WeightId id) const {
    switch (id) {
      case WeightId::kFfnNorm:
        return ffn_norm;
      case WeightId::kPostAttnNorm:
        return post_attn_norm;
      case WeightId::kPostFfnNorm:
        return post_ffn_norm;
      default:
        return attn_norm;
    }
  }
};

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
    if (stream_) cudaStreamDestroy(stream_);
    if (meta_host_) cudaFreeHost(meta_host_);
    if (host_logits_) cudaFreeHost(host_logits_);
    if (sample_host_) cudaFreeHost(sample_host_);
    if (ids_host_) cudaFreeHost(ids_host_);
    if (constraint_host_) cudaFreeHost(constraint_host_);
    if (constraints_copied_) cudaEventDestroy(constraints_copied_);
    if (copy_stream_) cudaStreamDestroy(copy_stream_);
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
    return Run(batch, {}, FillTokenMasksFn([](uint32_t*, size_t) {}), logits, nullptr);
  }
  bool CanSample() const override { return true; }
  using ForwardBackend::ForwardSample;
  Status ForwardSample(const ForwardBatch& batch, std::span<const RowSampling> sampling,
                       FillTokenMasksFn fill_masks, float* logits, int32_t* ids) override;
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
  Status UploadRopeTables();
  Status Validate(const ForwardBatch& batch) const;
  Status Prepare(const ForwardBatch& batch);
  Status EnsureScratch(int64_t tokens, int64_t rows, int64_t partials);
  Status RunStep(int64_t tokens, int64_t rows);  // every launch of a step, on stream_
  void ClearGraphs() {
    for (auto& [key, entry] : graphs_) {
      if (entry.exec) cudaGraphExecDestroy(entry.exec);
    }
    graphs_.clear();
  }
  // y[T, w.rows] (f32) (+)= x[T, w.cols] (bf16) . w^T, on the kernel for w's type and T.
  Status Gemm(const DeviceWeight& w, const void* x, int64_t tokens, float* y, bool accumulate);
  Status ResidualGemm(const DeviceWeight& w, const void* in, int64_t T);
  // One layer of a step: `ops` is plan_.ops or plan_.gemv_ops. `ss_parts` carries the number
  // of partial sums of squares the last fused-GEMV producer wrote to the next consumer.
  Status RunLayerPlan(const std::vector<cuda::StepOp>& ops, int64_t layer, int64_t T, uint16_t* kv,
                      cuda::AttnArgs& attn, int& ss_parts);
  Status RunAttention(cuda::AttnArgs& attn, int64_t T);

  ModelConfig config_;
  CudaBackendOptions options_;
  ModelProgram program_;
  cuda::LayerPlan plan_;
  // The key window every layer shares (0: none, or layers differ): bounds the step's attention
  // items; a layer's own window is masked in the kernels.
  int items_window_ = 0;
  bool bf16_weights_ = true;  // every matrix is stored as BF16 (what the fused GEMVs read)
  std::string device_name_;
  int num_sms_ = 0;
  cudaStream_t stream_ = nullptr;

  DeviceWeight embedding_;  // [vocab, hidden]
  DeviceWeight lm_head_;    // [vocab, hidden]; empty when tied to the embedding
  std::vector<DeviceLayer> layers_;
  DeviceBuffer final_norm_;
  std::vector<DeviceBuffer> inv_freqs_;  // one per program rope table

  int64_t num_blocks_ = 0;
  DeviceBuffer kv_;  // see kernels.h for the layout

  // Scratch, grown to the largest step seen.
  int64_t cap_tokens_ = 0, cap_rows_ = 0, cap_partials_ = 0;
  DeviceBuffer x_, xn_, qkv_, q_, attn_, gate_up_, act_, logits_, part_acc_, part_ml_;
  DeviceBuffer tmp_;              // unfused baseline: GEMM output before the residual add
  DeviceBuffer ss_;               // fused GEMVs: partial sums of squares for the next RMSNorm
  float* host_logits_ = nullptr;  // pinned, lent to the engine (HostLogitsBuffer)
  size_t host_logits_cap_ = 0;
  // Device sampling: per-row parameters and the drawn ids, pinned on the host and on the device.
  cuda::DeviceSampling* sample_host_ = nullptr;
  int32_t* ids_host_ = nullptr;
  size_t sample_cap_ = 0;
  DeviceBuffer sample_dev_, ids_dev_;
  DeviceBuffer sample_scratch_;  // partials of rows split over several blocks
  // Token masks and logit_bias of device rows (cuda_sampling_step.cc): pinned staging, its
  // device copy, and the side stream that copies it while the forward pass runs.
  unsigned char* constraint_host_ = nullptr;
  size_t constraint_cap_ = 0;  // bytes
  DeviceBuffer constraint_dev_;
  cudaStream_t copy_stream_ = nullptr;
  cudaEvent_t constraints_copied_ = nullptr;
  Status Run(const ForwardBatch& batch, std::span<const RowSampling> sampling,
             FillTokenMasksFn fill_masks, float* logits, int32_t* ids);
  Status EnsureSampleBuffers(size_t rows);
  Status EnsureConstraintBuffers(size_t bytes);
  // After the forward pass is queued: device rows drawn (ids to ids_host_, *num_device of
  // them), host rows' logits copied to `logits`; nothing waited for.
  Status SampleRows(std::span<const RowSampling> sampling, FillTokenMasksFn fill_masks,
                    float* logits, int* num_device);
  // logit_bias and token masks of the device rows, on the logits before the draw.
  Status ApplyRowConstraints(std::span<const RowSampling> sampling, FillTokenMasksFn fill_masks);

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
  std::vector<std::string> LastStepLaunches() const {
    return std::vector<std::string>(prof_labels_.begin() + std::min<size_t>(1, prof_n_),
                                    prof_labels_.begin() + prof_n_);
  }

 private:
  std::vector<cudaEvent_t> prof_events_;
  std::vector<const char*> prof_labels_;
  size_t prof_n_ = 0;
  std::map<std::string, double> prof_ms_;
  int64_t prof_steps_ = 0;

  DeviceBuffer cublas_workspace_;  // fixed, so that captured GEMMs never allocate
  GemmTuner gemm_;
  std::map<GraphKey, GraphEntry> graphs_;
};

}  // namespace jisu::cuda_detail
