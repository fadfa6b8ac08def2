// `jisu bench-gpu`: the CUDA backend at a real model shape with random weights generated on
// the device (no model file): decode tokens/s at several batch sizes and one context length,
// prefill tokens/s at several prompt lengths, and the HBM bandwidth decode achieves against a
// measured device-to-device copy. Times whole Forward() calls, logits copied to the host
// included, as the engine calls them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "model/model_config.h"
#include "testmodel/model_shapes.h"
#ifdef JISU_HAVE_CUDA
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#endif

namespace jisu::cli {
namespace {

struct BenchGpuFlags {
  std::string shape = "llama-3.1-8b";
  std::string batches = "1,8,64,256";
  int64_t context = 1024;
  std::string prefills = "512,2048,8192";
  int64_t steps = 20;
  int device = 0;
  bool no_graphs = false;
  bool no_gemm_tuning = false;
  int gemv_tokens = 2;
  int skinny_tokens = 16;
  bool profile = false;
  bool no_flash = false;
  bool unfused = false;
  bool device_sampling = false;
  int64_t attn_chunk = 0;
  int decode_variant = 0;
};

#ifdef JISU_HAVE_CUDA
Result<std::vector<int64_t>> ParseList(const std::string& text, const char* flag) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      const int64_t v = std::stoll(item);
      if (v < 1 || v > (1 << 20)) throw 0;
      out.push_back(v);
    } catch (...) {
      return Status::InvalidArgument(std::string(flag) + ": bad value '" + item + "'");
    }
  }
  if (out.empty()) return Status::InvalidArgument(std::string(flag) + ": empty list");
  return out;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Status RunBenchGpu(const BenchGpuFlags& f) {
  JISU_ASSIGN_OR_RETURN(ModelConfig c, NamedModelShape(f.shape));
  JISU_ASSIGN_OR_RETURN(auto batches, ParseList(f.batches, "--batch"));
  JISU_ASSIGN_OR_RETURN(auto prefills, ParseList(f.prefills, "--prefill"));
  if (f.context < 1 || f.steps < 1) return Status::InvalidArgument("--context/--steps: >= 1");
  std::string why;
  if (!CudaDeviceAvailable(&why)) return Status::Unsupported("bench-gpu: " + why);

  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, f.device);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf("device: %s, %d SMs, %.1f GiB; CUDA driver %d, runtime %d\n", prop.name,
              prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0, driver, runtime);
  JISU_ASSIGN_OR_RETURN(double copy_bw, MeasureCudaCopyBandwidth(f.device, 2ull << 30));
  std::printf("device-to-device copy: %.0f GB/s (read + write)\n", copy_bw / 1e9);

  const int64_t bs = 16;
  const int64_t max_batch = *std::max_element(batches.begin(), batches.end());
  const int64_t max_prefill = *std::max_element(prefills.begin(), prefills.end());
  const int64_t per_seq = (f.context + f.steps + 8 + bs - 1) / bs;
  const int64_t blocks = std::max(max_batch * per_seq, (max_prefill + bs - 1) / bs);
  CudaBackendOptions o;
  o.device = f.device;
  o.block_size = bs;
  o.kv_fraction = 0.95;
  o.max_kv_blocks = blocks;
  o.cuda_graphs = !f.no_graphs;
  o.tune_gemms = !f.no_gemm_tuning;
  o.gemv_max_tokens = f.gemv_tokens;
  o.skinny_max_tokens = f.skinny_tokens;
  o.profile = f.profile;
  o.flash_attention = !f.no_flash;
  o.fused_kernels = !f.unfused;
  BackendOptions env;  // JISU_SAMPLER, JISU_GEMV_PDL
  ApplyEnvOverrides(&env);
  o.reference_sampler = env.reference_sampler;
  o.gemv_pdl = env.gemv_pdl;
  o.attention_chunk_tokens = f.attn_chunk;
  o.decode_attn_variant = f.decode_variant;
  std::printf("decode tokens %s, ", f.device_sampling ? "sampled on the GPU" : "as host logits");
  std::printf("GEMV kernels up to %d tokens, skinny GEMM up to %d, ", f.gemv_tokens,
              f.skinny_tokens);
  std::printf("elementwise kernels %s, attention %s, ", f.unfused ? "UNFUSED" : "fused",
              f.no_flash ? "FP32 kernel" : "flash (mma.sync)");
  std::printf("CUDA graphs %s, GEMM tuning %s, key chunk %s, decode attention variant %d\n",
              f.no_graphs ? "off" : "on", f.no_gemm_tuning ? "off" : "on",
              f.attn_chunk > 0 ? std::to_string(f.attn_chunk).c_str() : "auto", f.decode_variant);
  const double t0 = Now();
  JISU_ASSIGN_OR_RETURN(auto backend, CreateCudaBackendRandom(c, o, 1234));
  if (backend->num_kv_blocks() < blocks) {
    return Status::ResourceExhausted("bench-gpu: not enough GPU memory for the KV blocks");
  }
  const uint64_t h = c.hidden_size, f_dim = c.intermediate_size;
  const uint64_t layer_params = (c.q_dim() + 2 * c.kv_dim()) * h + h * c.q_dim() + 3 * f_dim * h;
  const uint64_t matmul_params = c.num_layers * layer_params + c.vocab_size * h;
  const uint64_t weight_bytes = matmul_params * 2;
  std::printf(
      "shape %s: %s; %.2f GB of BF16 matrices (streamed per decode step), "
      "set up in %.1f s; KV %.1f GiB in %lld blocks of %lld\n",
      f.shape.c_str(), c.Describe().c_str(), weight_bytes / 1e9, Now() - t0,
      backend->num_kv_blocks() * backend->kv_bytes_per_block() / 1073741824.0,
      static_cast<long long>(backend->num_kv_blocks()), static_cast<long long>(bs));

  float* logits = nullptr;
  const int64_t max_rows = std::max<int64_t>(max_batch, 1);
  if (cudaMallocHost(reinterpret_cast<void**>(&logits), max_rows * c.vocab_size * 4) !=
      cudaSuccess) {
    return Status::ResourceExhausted("bench-gpu: cannot allocate pinned logits");
  }
  struct Free {
    float* p;
    ~Free() { cudaFreeHost(p); }
  } free_logits{logits};

  // Decode: B sequences at context f.context (their cache blocks hold zeros: the time of a
  // step does not depend on the values), one token each per step, logits for every row.
  const uint64_t kv_token_bytes = 2ull * c.num_layers * c.kv_dim() * 2;
  std::printf("\ndecode (context %lld, %lld steps)\n", static_cast<long long>(f.context),
              static_cast<long long>(f.steps));
  std::printf("%6s %10s %12s %10s %12s %8s\n", "batch", "step ms", "tokens/s", "GB/step",
              "HBM GB/s", "of copy");
  for (int64_t B : batches) {
    std::vector<std::vector<int32_t>> tables(B);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < per_seq; ++i)
        tables[b].push_back(static_cast<int32_t>(b * per_seq + i));
    }
    std::vector<int32_t> ids(B);
    std::vector<int64_t> rows(B);
    for (int64_t b = 0; b < B; ++b)
      ids[b] = static_cast<int32_t>((b * 7919) % c.vocab_size), rows[b] = b;
    // --device-sampling: every row drawn on the GPU (temperature 0.8, top-p 0.95), ids only
    // back; otherwise every row's logits to the host, as a host sampler needs them.
    std::vector<RowSampling> sampling(f.device_sampling ? B : 0);
    for (RowSampling& r : sampling) {
      r.on_device = true;
      r.temperature = 0.8f;
      r.top_p = 0.95f;
      r.u = 0.5;
    }
    std::vector<int32_t> drawn(B);
    auto step = [&](int64_t pos) {
      ForwardBatch batch;
      batch.token_ids = ids;
      batch.logits_rows = rows;
      for (int64_t b = 0; b < B; ++b) batch.sequences.push_back(BatchSequence{1, pos, tables[b]});
      return f.device_sampling ? backend->ForwardSample(batch, sampling, logits, drawn.data())
                               : backend->Forward(batch, logits);
    };
    for (int i = 0; i < 3; ++i) JISU_RETURN_IF_ERROR(step(f.context + i));
    const double start = Now();
    for (int64_t i = 0; i < f.steps; ++i) JISU_RETURN_IF_ERROR(step(f.context + i));
    const double sec = (Now() - start) / f.steps;
    const double bytes =
        static_cast<double>(weight_bytes) + static_cast<double>(B) * f.context * kv_token_bytes;
    std::printf("%6lld %10.3f %12.0f %10.2f %12.0f %7.0f%%\n", static_cast<long long>(B), sec * 1e3,
                B / sec, bytes / 1e9, bytes / sec / 1e9, 100 * bytes / sec / copy_bw);
    if (f.profile) std::printf("%s", CudaProfileReport(*backend).c_str());
  }

  // Prefill: one sequence of P tokens from position 0, logits of the last row only.
  std::printf("\nprefill (one sequence, logits of the last token)\n");
  std::printf("%6s %10s %12s %10s\n", "tokens", "ms", "tokens/s", "TFLOP/s");
  std::vector<int32_t> table((max_prefill + bs - 1) / bs);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  for (int64_t P : prefills) {
    std::vector<int32_t> ids(P);
    for (int64_t i = 0; i < P; ++i) ids[i] = static_cast<int32_t>((i * 7919) % c.vocab_size);
    const int64_t last = P - 1;
    ForwardBatch batch{ids, {BatchSequence{P, 0, table}}, std::span(&last, 1)};
    JISU_RETURN_IF_ERROR(backend->Forward(batch, logits));
    const int runs = 3;
    const double start = Now();
    for (int i = 0; i < runs; ++i) JISU_RETURN_IF_ERROR(backend->Forward(batch, logits));
    const double sec = (Now() - start) / runs;
    // 2 flops per weight per token (the LM head for one row only), plus causal attention:
    // q.k and p.v, 2 * 2 * head_dim per (query head, key) pair, P^2 / 2 pairs.
    const double flops = 2.0 * (c.num_layers * static_cast<double>(layer_params)) * P +
                         2.0 * c.vocab_size * h +
                         4.0 * c.head_dim * c.num_heads * c.num_layers * (0.5 * P * P);
    std::printf("%6lld %10.2f %12.0f %10.1f\n", static_cast<long long>(P), sec * 1e3, P / sec,
                flops / sec / 1e12);
    if (f.profile) std::printf("%s", CudaProfileReport(*backend).c_str());
  }
  return Status::Ok();
}
#else
Status RunBenchGpu(const BenchGpuFlags&) {
  return Status::Unsupported("bench-gpu: this build has no CUDA backend (-DJISU_CUDA=ON)");
}
#endif

}  // namespace

void RegisterBenchGpu(CLI::App& app) {
  auto flags = std::make_shared<BenchGpuFlags>();
  auto* cmd = app.add_subcommand("bench-gpu",
                                 "CUDA backend decode/prefill throughput at a real model shape "
                                 "with random weights");
  cmd->add_option("--shape", flags->shape, "a named shape (jisu make-model --list)");
  cmd->add_option("-b,--batch", flags->batches, "comma-separated decode batch sizes");
  cmd->add_option("--context", flags->context, "context length of each decoding sequence");
  cmd->add_option("-p,--prefill", flags->prefills, "comma-separated prompt lengths");
  cmd->add_option("--steps", flags->steps, "timed decode steps per batch size");
  cmd->add_option("--gpu", flags->device, "CUDA device index");
  cmd->add_flag("--no-graphs", flags->no_graphs, "launch every step eagerly");
  cmd->add_flag("--no-gemm-tuning", flags->no_gemm_tuning,
                "cuBLASLt's first heuristic pick instead of the algorithm timed fastest per shape");
  cmd->add_option("--gemv-tokens", flags->gemv_tokens,
                  "steps of at most this many tokens on the fused GEMV kernels (0-8; 0: cuBLAS)")
      ->check(CLI::Range(0, 8));
  cmd->add_option("--skinny-tokens", flags->skinny_tokens,
                  "steps of at most this many tokens on the wgmma weight-stream GEMM "
                  "(0-16; 0: cuBLAS)")
      ->check(CLI::Range(0, 16));
  cmd->add_flag("--no-flash", flags->no_flash,
                "attention on the FP32 kernel instead of the mma.sync flash kernels");
  cmd->add_flag("--device-sampling", flags->device_sampling,
                "decode steps draw every token on the GPU (only ids to the host)");
  cmd->add_flag("--unfused", flags->unfused,
                "unfused baseline: every elementwise step its own kernel (fusion study)");
  cmd->add_flag("--profile", flags->profile,
                "per-kernel breakdown with CUDA events (graphs off; slower steps)");
  cmd->add_option("--attn-chunk", flags->attn_chunk, "attention key chunk (0 = auto)");
  cmd->add_option("--decode-variant", flags->decode_variant,
                  "decode attention block shape (0-7, see backend/cuda/kernels.h)")
      ->check(CLI::Range(0, 7));
  cmd->callback([flags] { ReportStatus(RunBenchGpu(*flags)); });
}

}  // namespace jisu::cli
