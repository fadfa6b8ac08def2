#include "backend/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cuda/cuda_backend_impl.h"
#include "kv/kv_cache.h"
#include "model/arch/architectures.h"
#include "model/layer_program.h"

namespace jisu {
namespace cuda_detail {

Status CudaBackend::Init() {
  const ModelConfig& c = config_;
  JISU_RETURN_IF_ERROR(c.Validate());
  program_ = BuildModelProgram(c);
  JISU_ASSIGN_OR_RETURN(plan_, cuda::PlanLayer(program_, ArchitectureName(c.arch)));
  items_window_ = static_cast<int>(program_.layers.empty() ? 0 : program_.layers[0].window);
  for (const LayerParams& l : program_.layers) {
    if (l.window != items_window_) items_window_ = 0;
  }
  if (options_.block_size < 1 || options_.block_size > 1024) {
    return Status::InvalidArgument("cuda backend: block size must be in [1, 1024]");
  }
  if (!cuda::AttentionSupportsHeadDim(static_cast<int>(c.head_dim))) {
    return Status::Unsupported("cuda backend: head_dim " + std::to_string(c.head_dim) +
                               " is not supported (32, 64, 128, 256)");
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
  JISU_RETURN_IF_ERROR(cublas_workspace_.Resize(32 << 20));
  JISU_RETURN_IF_ERROR(
      gemm_.Init(cublas_workspace_.get(), cublas_workspace_.size(), options_.tune_gemms));
  // The fused GEMVs' partial sums of squares: at most 4096 blocks x 8 tokens.
  JISU_RETURN_IF_ERROR(ss_.Resize(4096 * cuda::kMaxGemvTokens * sizeof(float)));
  return AllocateWeights();
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
    // The unfused baseline's residual adds and the post norms read a product's output there.
    if (!options_.fused_kernels || program_.Uses(WeightId::kPostAttnNorm) ||
        program_.Uses(WeightId::kPostFfnNorm)) {
      JISU_RETURN_IF_ERROR(tmp_.Resize(t * c.hidden_size * 4));
    }
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

Status CudaBackend::Gemm(const DeviceWeight& w, const void* x, int64_t tokens, float* y,
                         bool accumulate) {
  if (!w.is_bf16()) {
    return Status::Unsupported("cuda backend: no product kernel for " +
                               std::string(DTypeName(w.type)) + " weights");
  }
  const int64_t n = w.rows, k = w.cols;
  if (tokens <= std::min<int64_t>(options_.gemv_max_tokens, cuda::kMaxGemvTokens) &&
      cuda::LaunchGemv(w.bf16(), static_cast<int>(n), static_cast<int>(k),
                       static_cast<const uint16_t*>(x), static_cast<int>(tokens), y, accumulate,
                       stream_, options_.gemv_pdl)) {
    return Status::Ok();
  }
  if (tokens <= std::min<int64_t>(options_.skinny_max_tokens, cuda::kMaxSkinnyTokens) &&
      cuda::LaunchSkinnyGemm(w.bf16(), static_cast<int>(n), static_cast<int>(k),
                             static_cast<const uint16_t*>(x), static_cast<int>(tokens), y,
                             accumulate, num_sms_, stream_)) {
    return Status::Ok();
  }
  if (!options_.library_gemms) {
    return Status::Unsupported("cuda backend: a product of " + std::to_string(tokens) +
                               " tokens needs cuBLASLt, which library_gemms=false turns off");
  }
  return gemm_.Run(w.bf16(), static_cast<int>(n), static_cast<int>(k), x, static_cast<int>(tokens),
                   y, accumulate, stream_);
}

Status CudaBackend::Run(const ForwardBatch& batch, std::span<const RowSampling> sampling,
                        FillTokenMasksFn fill_masks, float* logits, int32_t* ids) {
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
    JISU_RETURN_IF_ERROR(SampleRows(sampling, fill_masks, logits, &num_device));
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
  // Steps of a few tokens (decode) run the layer's fused-GEMV form: norms, rope + K/V write,
  // the gated activation and the residual add ride in the products (BF16 weights only). Larger
  // steps run the per-op kernels.
  const bool gemv = options_.fused_kernels && bf16_weights_ &&
                    T <= std::min<int64_t>(options_.gemv_max_tokens, cuda::kMaxGemvTokens) &&
                    hidden % 8 == 0 && c.q_dim() % 8 == 0 && c.intermediate_size % 8 == 0 &&
                    c.head_dim % 2 == 0;
  const std::vector<cuda::StepOp>& ops = gemv ? plan_.gemv_ops : plan_.ops;
  int ss_parts = 1;  // producers of the partial sums of squares the next norm reads
  if (!ops.empty() && ops.front().fused_norm) {
    // The first layer's input norm rides in the embedding, as the last residual's does after.
    cuda::LaunchEmbedNormInput(embedding_.bf16(), meta + off_ids_, static_cast<int>(T), hidden,
                               program_.embed_scale, layers_[0].Norm(ops.front().norm).as<float>(),
                               x_.as<float>(), xn_.as<uint16_t>(), ss_.as<float>(), s);
  } else {
    cuda::LaunchEmbed(embedding_.bf16(), meta + off_ids_, static_cast<int>(T), hidden,
                      program_.embed_scale, x_.as<float>(), s);
  }
  Mark("embed");

  cuda::AttnArgs attn;
  attn.q = q_.as<float>();
  attn.block_tables = meta + off_tables_;
  attn.heads = static_cast<int>(c.num_heads);
  attn.kv_heads = static_cast<int>(c.num_kv_heads);
  attn.head_dim = static_cast<int>(c.head_dim);
  attn.block_size = static_cast<int>(options_.block_size);
  attn.out = attn_.as<uint16_t>();
  attn.part_acc = part_acc_.as<float>();
  attn.part_ml = part_ml_.as<float>();
  attn.max_chunks = max_chunks_;
  attn.flash = options_.flash_attention;
  attn.decode_variant = options_.decode_attn_variant;
  // A decode grid of at most one block an SM (batch 1, split keys): four warps over 128-key
  // tiles, every load of a 128-key chunk issued at once. On an H200 (8B shape, context 1024)
  // batch 1 1.0-2.1% shorter steps than 2/32/3 in five calls; slower at batch 2 and 8, where
  // the grid is larger (bench/results/2026-12-01-cuda-h200-decode-shape.md).
  if (attn.decode_variant == 0 && c.head_dim == 128 &&
      static_cast<int64_t>(num_decode_items_) * c.num_kv_heads <= num_sms_) {
    attn.decode_variant = 7;
  }
  const uint64_t layer_kv = static_cast<uint64_t>(num_blocks_) * BlockBytes() / 2;  // elements
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    uint16_t* kv = kv_.as<uint16_t>() + layer * layer_kv;
    attn.sliding_window = static_cast<int>(program_.layers[layer].window);
    JISU_RETURN_IF_ERROR(RunLayerPlan(ops, layer, T, kv, attn, ss_parts));
  }
  if (R > 0) {
    cuda::LaunchRmsNorm(x_.as<float>(), meta + off_rows_, static_cast<int>(R), hidden,
                        final_norm_.as<float>(), program_.norm_eps, xn_.as<uint16_t>(), s);
    Mark("rmsnorm");
    const DeviceWeight& head = lm_head_.empty() ? embedding_ : lm_head_;
    JISU_RETURN_IF_ERROR(Gemm(head, xn_.get(), R, logits_.as<float>(), false));
    Mark("gemm_lm_head");
    if (program_.final_logit_softcap > 0) {
      cuda::LaunchSoftcap(logits_.as<float>(), static_cast<size_t>(R) * c.vocab_size,
                          program_.final_logit_softcap, s);
      Mark("softcap");
    }
  }
  return Status::Ok();
}

// The step's decode items, then its prefill tiles, then the merge of split keys.
Status CudaBackend::RunAttention(cuda::AttnArgs& attn, int64_t T) {
  const auto* items = reinterpret_cast<const AttnItem*>(meta_dev_.as<int32_t>() + off_items_);
  attn.items = items;
  attn.num_items = num_decode_items_;
  attn.rows_per_warp = decode_rpw_;
  cuda::LaunchAttention(attn, stream_);
  Mark("attn_decode");
  attn.items = items + num_decode_items_;
  attn.num_items = num_prefill_items_;
  attn.rows_per_warp = 16;
  cuda::LaunchAttention(attn, stream_);
  Mark("attn_prefill");
  if (max_chunks_ > 1) {
    cuda::LaunchAttentionCombine(attn, meta_dev_.as<int32_t>() + off_chunks_, static_cast<int>(T),
                                 stream_);
    Mark("attn_combine");
  }
  return Status::Ok();
}

// y = x + w . in: in the GEMM epilogue (fused), or a GEMM into tmp_ and an add kernel.
Status CudaBackend::ResidualGemm(const DeviceWeight& w, const void* in, int64_t T) {
  if (options_.fused_kernels) return Gemm(w, in, T, x_.as<float>(), true);
  JISU_RETURN_IF_ERROR(Gemm(w, in, T, tmp_.as<float>(), false));
  cuda::LaunchAdd(x_.as<float>(), tmp_.as<float>(), static_cast<size_t>(T) * w.rows, stream_);
  return Status::Ok();
}

// One layer: `ops` is the layer program matched to kernel sequences (cuda_program.h), per op or
// in its fused-GEMV form. The unfused baseline (options_.fused_kernels off) splits the fused
// elementwise kernels into one kernel a step, as an eager framework runs them.
Status CudaBackend::RunLayerPlan(const std::vector<cuda::StepOp>& ops, int64_t layer, int64_t T,
                                 uint16_t* kv, cuda::AttnArgs& attn, int& ss_parts) {
  const ModelConfig& c = config_;
  const DeviceLayer& w = layers_[layer];
  const int hidden = static_cast<int>(c.hidden_size);
  const int T32 = static_cast<int>(T);
  const int32_t* meta = meta_dev_.as<int32_t>();
  const int heads = static_cast<int>(c.num_heads);
  const int kv_heads = static_cast<int>(c.num_kv_heads);
  const int head_dim = static_cast<int>(c.head_dim);
  const int qkv_dim = static_cast<int>(QkvDim());
  const int ffn = static_cast<int>(c.intermediate_size);
  const float eps = program_.norm_eps;
  const float* inv_freq = inv_freqs_[program_.layers[layer].rope].as<float>();
  const bool interleaved = program_.rope_style == RopeStyle::kInterleaved;
  cudaStream_t s = stream_;
  // x += w . in, through the post norm when the program has one.
  auto residual = [&](const DeviceWeight& m, const void* in, WeightId post) -> Status {
    if (post == WeightId::kCount) return ResidualGemm(m, in, T);
    JISU_RETURN_IF_ERROR(Gemm(m, in, T, tmp_.as<float>(), false));
    cuda::LaunchRmsNormAdd(x_.as<float>(), tmp_.as<float>(), T32, hidden, w.Norm(post).as<float>(),
                           eps, s);
    return Status::Ok();
  };
  // The fused GEMVs' fields common to every launch of the step.
  auto gemv_base = [&] {
    cuda::GemvArgs g;
    g.tokens = T32;
    g.programmatic_launch = options_.gemv_pdl;
    g.eps = eps;
    return g;
  };
  // A fused GEMV consumer's input: u and the sums of squares of its norm, or xn as is.
  auto gemv_input = [&](const cuda::StepOp& op, cuda::GemvArgs& g) {
    g.x = xn_.as<uint16_t>();
    g.ss_in = op.fused_norm ? ss_.as<float>() : nullptr;
    g.ss_in_parts = ss_parts;
  };
  // x += m . in on the residual GEMV; it writes the next norm's input when the plan says so.
  auto residual_gemv = [&](const cuda::StepOp& op, const DeviceWeight& m, const uint16_t* in,
                           int k) -> Status {
    cuda::GemvArgs g = gemv_base();
    g.op = cuda::GemvOp::kAccumulate;
    g.w = m.bf16();
    g.rows = hidden;
    g.k = k;
    g.x = in;
    g.y = x_.as<float>();
    const bool last = layer + 1 == c.num_layers;
    if (op.next_norm != WeightId::kCount && !(op.next_layer && last)) {
      const DeviceLayer& nl = op.next_layer ? layers_[layer + 1] : w;
      g.u_out = xn_.as<uint16_t>();
      g.u_weight = nl.Norm(op.next_norm).as<float>();
      g.ss_out = ss_.as<float>();
    }
    if (!cuda::LaunchGemvOp(g, s)) return Status::Internal("cuda backend: residual gemv refused");
    if (g.ss_out) ss_parts = cuda::GemvBlocks(g);
    return Status::Ok();
  };
  for (const cuda::StepOp& op : ops) {
    switch (op.kind) {
      case cuda::StepKind::kNormIn:
        cuda::LaunchRmsNorm(x_.as<float>(), nullptr, T32, hidden, w.Norm(op.norm).as<float>(), eps,
                            xn_.as<uint16_t>(), s);
        break;
      case cuda::StepKind::kQkvProject:
        JISU_RETURN_IF_ERROR(Gemm(w.wqkv, xn_.get(), T, qkv_.as<float>(), false));
        break;
      case cuda::StepKind::kQkvBias:
        cuda::LaunchAddBias(qkv_.as<float>(), w.bqkv.as<float>(), T32, qkv_dim, qkv_dim, s);
        break;
      case cuda::StepKind::kHeadNorm:
        cuda::LaunchHeadRmsNorm(qkv_.as<float>(), w.q_norm.as<float>(), w.k_norm.as<float>(), T32,
                                heads, kv_heads, head_dim, qkv_dim, eps, s);
        break;
      case cuda::StepKind::kRopeKv: {
        const float* bias = op.fuse_bias ? w.bqkv.as<float>() : nullptr;
        if (options_.fused_kernels) {
          cuda::LaunchQkvRope(qkv_.as<float>(), bias, meta + off_pos_, meta + off_slots_, T32,
                              heads, kv_heads, head_dim, inv_freq, interleaved, program_.attn_scale,
                              q_.as<float>(), kv, static_cast<int>(options_.block_size), s);
        } else {
          if (bias) cuda::LaunchAddBias(qkv_.as<float>(), bias, T32, qkv_dim, qkv_dim, s);
          cuda::LaunchRopeInPlace(qkv_.as<float>(), meta + off_pos_, T32, heads, kv_heads, head_dim,
                                  inv_freq, interleaved, s);
          cuda::LaunchSplitQkvToCache(qkv_.as<float>(), meta + off_slots_, T32, heads, kv_heads,
                                      head_dim, program_.attn_scale, q_.as<float>(), kv,
                                      static_cast<int>(options_.block_size), s);
        }
        break;
      }
      case cuda::StepKind::kAttention:
        attn.kv = kv;
        JISU_RETURN_IF_ERROR(RunAttention(attn, T));
        break;
      case cuda::StepKind::kOutProject:
        JISU_RETURN_IF_ERROR(residual(w.wo, attn_.get(), op.norm));
        break;
      case cuda::StepKind::kGateUpProject:
        JISU_RETURN_IF_ERROR(Gemm(w.w_gate_up, xn_.get(), T, gate_up_.as<float>(), false));
        break;
      case cuda::StepKind::kGatedAct:
        if (op.act == Activation::kGeluTanh) {
          cuda::LaunchGeluTanhMul(gate_up_.as<float>(), T32, ffn, act_.as<uint16_t>(), s);
        } else if (options_.fused_kernels) {
          cuda::LaunchSiluMul(gate_up_.as<float>(), T32, ffn, act_.as<uint16_t>(), s);
        } else {
          cuda::LaunchSiluInPlace(gate_up_.as<float>(), T32, ffn, s);
          cuda::LaunchMulToBf16(gate_up_.as<float>(), T32, ffn, act_.as<uint16_t>(), s);
        }
        break;
      case cuda::StepKind::kDownProject:
        JISU_RETURN_IF_ERROR(residual(w.w_down, act_.get(), op.norm));
        break;
      case cuda::StepKind::kQkvRopeGemv: {
        cuda::GemvArgs g = gemv_base();
        g.op = cuda::GemvOp::kQkvRope;
        g.w = w.wqkv.bf16();
        g.rows = qkv_dim;
        g.k = hidden;
        gemv_input(op, g);
        g.bias = op.fuse_bias ? w.bqkv.as<float>() : nullptr;
        g.positions = meta + off_pos_;
        g.slots = meta + off_slots_;
        g.inv_freq = inv_freq;
        g.interleaved = interleaved;
        g.q_scale = program_.attn_scale;
        g.q_out = q_.as<float>();
        g.kv_layer = kv;
        g.block_size = static_cast<int>(options_.block_size);
        g.heads = heads;
        g.kv_heads = kv_heads;
        g.head_dim = head_dim;
        if (!cuda::LaunchGemvOp(g, s)) return Status::Internal("cuda backend: qkv gemv refused");
        break;
      }
      case cuda::StepKind::kGateActGemv: {
        cuda::GemvArgs g = gemv_base();
        g.op = cuda::GemvOp::kSwiGlu;
        g.w = w.w_gate_up.bf16();
        g.rows = 2 * ffn;
        g.n = ffn;
        g.k = hidden;
        gemv_input(op, g);
        g.act = act_.as<uint16_t>();
        if (!cuda::LaunchGemvOp(g, s))
          return Status::Internal("cuda backend: gate/up gemv refused");
        break;
      }
      case cuda::StepKind::kOutGemv:
        JISU_RETURN_IF_ERROR(
            residual_gemv(op, w.wo, attn_.as<uint16_t>(), static_cast<int>(c.q_dim())));
        break;
      case cuda::StepKind::kDownGemv:
        JISU_RETURN_IF_ERROR(residual_gemv(op, w.w_down, act_.as<uint16_t>(), ffn));
        break;
    }
    if (op.kind != cuda::StepKind::kAttention) Mark(cuda::StepKindName(op.kind));
  }
  return Status::Ok();
}

}  // namespace cuda_detail

namespace {

using cuda_detail::CudaBackend;

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

std::vector<std::string> CudaLastStepLaunches(ForwardBackend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  return cuda ? cuda->LastStepLaunches() : std::vector<std::string>();
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
