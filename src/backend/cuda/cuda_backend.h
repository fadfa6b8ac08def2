// The CUDA implementation of ForwardBackend: the same Llama-family forward pass as
// backend/cpu/transformer.cc on an NVIDIA GPU, BF16 weights and KV cache, FP32 accumulation.
// Weights are uploaded once at creation (any host dtype, dequantized row by row through a
// pinned staging buffer); the KV pool lives in GPU memory and is addressed by the engine's
// block tables exactly like the CPU cache. Declared without CUDA headers so that the backend
// factory and the CLI build the same way with or without nvcc.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/forward_backend.h"
#include "jisu/status.h"
#include "model/model.h"
#include "model/model_config.h"

namespace jisu {

struct CudaBackendOptions {
  int device = 0;
  int64_t block_size = 16;    // token slots per KV block
  uint64_t kv_bytes = 0;      // > 0: absolute KV budget
  double kv_fraction = 0.9;   // else this fraction of the GPU memory free after the weights
  int64_t max_kv_blocks = 0;  // cap when > 0
  // Attention splits each sequence's keys into chunks of this many tokens and combines the
  // partial softmaxes (flash-decoding). 0 = chosen per step from the batch shape so that the
  // GPU has enough work; tests set it small to exercise the combine path.
  int64_t attention_chunk_tokens = 0;
  // Steps of at most 512 tokens replay a CUDA graph captured the second time their shape
  // (tokens, logits rows, attention work items) is seen, instead of ~10 launches a layer.
  bool cuda_graphs = true;
  // Head dim 64 or 128: attention on the mma.sync kernels (flash_attention.cu: S, P and O in
  // registers, K/V through a cp.async ring) for prefill tiles and for decode steps of GQA
  // groups up to 16 heads; off (or other shapes): the FP32 kernel. On an H200 they replaced a
  // WMMA prefill kernel (2048-token prefill 78 -> 58 ms) and a warp-split decode kernel.
  bool flash_attention = true;
  // False: the unfused baseline for the fusion study (bias, RoPE, K/V write, SiLU, multiply and
  // residual adds as separate kernels instead of fused ones and GEMM epilogues).
  bool fused_kernels = true;
  // Decode attention block shape (AttnArgs::decode_variant), for measurements.
  int decode_attn_variant = 0;
  // Steps of at most this many tokens (<= 8; 0: none) run on the backend's own GEMV kernels
  // (gemv.cu) with RMSNorm, RoPE + K/V write, SwiGLU and the residual add fused in, instead of
  // cuBLAS and separate kernels. On an H200 (Llama-3.1-8B shape) batch 1 5.44 -> 5.07 ms, equal
  // at 2 tokens, slower from 4 (bench/results/2026-12-01-cuda-h200-gemv.md).
  int gemv_max_tokens = 2;
  // Steps of more than gemv_max_tokens and at most this many tokens (<= 16; 0: none) run their
  // products on the wgmma weight-stream kernel (skinny_gemm.cu, Hopper) instead of cuBLAS: on an
  // H200 (8B shape) decode steps 5-6% shorter at 4-8 tokens, 3% at 16.
  int skinny_max_tokens = 16;
  // cuBLASLt GEMMs of up to 512 tokens on the algorithm timed fastest per shape and
  // power-of-two token bucket (backend/cuda/gemm_tuner.h); false: the library's first heuristic
  // pick.
  bool tune_gemms = true;
  // Times every launch group with CUDA events (graphs off): CudaProfileReport breaks a step
  // down by kernel. For measurements only; it slows steps down.
  bool profile = false;
  // Device sampling on the reference kernels for every launch instead of the fast path where
  // it applies (timing comparisons; JISU_SAMPLER=reference at the CLI).
  bool reference_sampler = false;
  // The fused GEMVs launch with programmatic dependent launch (sm_90); false for measurements
  // (JISU_GEMV_PDL=0 at the CLI).
  bool gemv_pdl = true;
  // false: a product the backend's own kernels do not take (a step of more than
  // skinny_max_tokens tokens) fails with Unsupported instead of running on cuBLASLt. Steps
  // then launch only jisu's kernels: the runs compute-sanitizer's racecheck can check, as it
  // cannot run through cuBLASLt's Hopper kernels (docs/RELIABILITY.md).
  bool library_gemms = true;
};

// False (and the reason) when no CUDA device or driver can be used here.
bool CudaDeviceAvailable(std::string* why);

// The model's weights are copied to the GPU; the backend keeps no reference to `model`.
Result<std::unique_ptr<ForwardBackend>> CreateCudaBackend(const Model& model,
                                                          const CudaBackendOptions& options);

// A backend of `config`'s shape with random BF16 weights generated on the device (benchmarks
// at real shapes without a model file). Norm weights are 1, matrices uniform in +-scale where
// scale keeps activations in range.
Result<std::unique_ptr<ForwardBackend>> CreateCudaBackendRandom(const ModelConfig& config,
                                                                const CudaBackendOptions& options,
                                                                uint64_t seed);

// With options.profile: milliseconds per step spent in each kernel group since the last call
// (one line each), then resets. Empty for other backends.
std::string CudaProfileReport(ForwardBackend& backend);
// With options.profile: the launch groups of the last step, in order (the labels of the
// report). Empty for other backends.
std::vector<std::string> CudaLastStepLaunches(ForwardBackend& backend);

// Device-to-device copy bandwidth in bytes/s (read + write counted), over `bytes` per copy:
// the roofline decode is compared to.
Result<double> MeasureCudaCopyBandwidth(int device, uint64_t bytes);

}  // namespace jisu
