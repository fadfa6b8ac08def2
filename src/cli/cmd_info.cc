#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/cpu_info.h"
#include "core/mem_bandwidth.h"
#include "ops/cpu_features.h"
#include "ops/matmul.h"
#include "ops/matmul_kernel_names.h"

namespace jisu::cli {
namespace {

struct InfoFlags {
  std::string model;
  bool system = false;
  bool membw = false;
  bool no_membw = false;
  int membw_mib = 1024;
  int threads = 0;
};

struct Bandwidth {
  int threads = 0;
  double one = 0, all = 0;  // GB/s at 1 and `threads` threads
};

Result<Bandwidth> MeasureBandwidth(const InfoFlags& f) {
  if (f.membw_mib < 64 || f.membw_mib > (1 << 20)) {
    return Status::InvalidArgument("--membw-mib must be between 64 and 1048576");
  }
  Bandwidth b;
  JISU_ASSIGN_OR_RETURN(b.threads, ThreadsFromFlag(f.threads));
  MemBandwidthOptions o;
  o.buffer_bytes = static_cast<uint64_t>(f.membw_mib) << 20;
  b.one = MeasureReadBandwidth(1, o);
  b.all = b.threads == 1 ? b.one : MeasureReadBandwidth(b.threads, o);
  return b;
}

void PrintBandwidth(const Bandwidth& b, int mib) {
  std::printf("memory read bandwidth: %.1f GB/s at 1 thread", b.one);
  if (b.threads != 1) std::printf(", %.1f GB/s at %d threads", b.all, b.threads);
  std::printf(" (streaming read of %d MiB, best of 5)\n", mib);
}

void PrintSystem(const CpuInfo& ci) {
  std::printf("cpu: %s (%s)\n", ci.model.empty() ? "unknown" : ci.model.c_str(), ci.arch.c_str());
  std::printf("threads: %d logical", ci.logical_cpus);
  if (ci.physical_cores > 0) std::printf(", %d physical cores", ci.physical_cores);
  if (ci.affinity_cpus > 0) std::printf(", %d usable by this process", ci.affinity_cpus);
  std::printf("\nisa features:");
  for (const std::string& f : ci.isa_features) std::printf(" %s", f.c_str());
  if (ci.isa_features.empty()) std::printf(" (none detected)");
  std::printf("\n");
  if (!ci.caches.empty()) {
    std::printf("caches (cpu 0):");
    for (const CacheLevel& c : ci.caches) {
      const char* kind = c.type == "Data" ? "d" : c.type == "Instruction" ? "i" : "";
      if (c.bytes >= (uint64_t{1} << 20) && c.bytes % (uint64_t{1} << 20) == 0) {
        std::printf(" L%d%s %llu MiB", c.level, kind,
                    static_cast<unsigned long long>(c.bytes >> 20));
      } else {
        std::printf(" L%d%s %llu KiB", c.level, kind,
                    static_cast<unsigned long long>(c.bytes >> 10));
      }
      if (c.shared_by_cpus > 1) std::printf(" (shared by %d)", c.shared_by_cpus);
      std::printf(";");
    }
    std::printf("\n");
  }
  if (ci.mem_total_bytes > 0) {
    std::printf("memory: %s total, %s available\n", FormatBytes(ci.mem_total_bytes).c_str(),
                FormatBytes(ci.mem_available_bytes).c_str());
  }
  std::printf("matmul isa: %s\n", MatMulIsaName());
  std::printf("matmul kernels (weight type: decode | prefill):\n");
  for (const MatMulKernelName& k : ListMatMulKernels()) {
    std::printf("  %-5s %s | %s\n", k.weight_type.c_str(), k.decode.c_str(), k.prefill.c_str());
  }
}

Status RunInfo(const InfoFlags& f) {
  if (f.membw) {  // just the bandwidth, for scripts
    JISU_ASSIGN_OR_RETURN(Bandwidth b, MeasureBandwidth(f));
    PrintBandwidth(b, f.membw_mib);
    return Status::Ok();
  }
  std::printf("jisu 0.1.0\n");
  std::printf("hardware threads: %u\n", std::thread::hardware_concurrency());
  const CpuFeatures& cpu = GetCpuFeatures();
  std::printf("cpu features: avx2+fma+f16c %s, avx512 %s, avx512-vnni %s, avx512-bf16 %s\n",
              cpu.avx2 ? "yes" : "no", cpu.avx512 ? "yes" : "no", cpu.avx512_vnni ? "yes" : "no",
              cpu.avx512_bf16 ? "yes" : "no");
  Bandwidth bw;
  if (f.system) {
    PrintSystem(ReadCpuInfo());
    if (!f.no_membw) {
      JISU_ASSIGN_OR_RETURN(bw, MeasureBandwidth(f));
      PrintBandwidth(bw, f.membw_mib);
    }
  }
  if (f.model.empty()) return Status::Ok();
  LoadOptions options;
  JISU_ASSIGN_OR_RETURN(auto model, LoadModelFlag(f.model, options));
  std::printf("model: %s (%s)\n", model->path().c_str(),
              model->format() == ModelFormat::kGguf ? "gguf" : "hugging face");
  std::printf("config: %s\n", model->config().Describe().c_str());
  const uint64_t matrix_bytes = model->weights().MatrixBytes();
  std::printf("weights: %s, %s in matrices\n", model->weight_type().c_str(),
              FormatBytes(matrix_bytes).c_str());
  if (bw.all > 0 && matrix_bytes > 0) {
    // Each decode step reads every matrix once (the embedding is a row gather).
    std::printf("decode roofline: %.1f tokens/s at %d threads (%.1f GB/s / %s per token)\n",
                bw.all * 1e9 / static_cast<double>(matrix_bytes), bw.threads, bw.all,
                FormatBytes(matrix_bytes).c_str());
  }
  const Tokenizer& tok = model->tokenizer();
  std::printf("tokenizer: %d tokens, bos %d, eos %d, stop ids:", tok.vocab_size(),
              tok.bos_id().value_or(-1), tok.eos_id().value_or(-1));
  for (int32_t id : model->eos_ids()) std::printf(" %d", id);
  std::printf("\nchat template: %s\n", model->chat_template().empty() ? "none" : "yes");
  return Status::Ok();
}

}  // namespace

void RegisterInfo(CLI::App& app) {
  auto flags = std::make_shared<InfoFlags>();
  auto* cmd = app.add_subcommand("info", "Print system information and, with -m, a model's");
  cmd->add_option("-m,--model", flags->model, "HF model folder or .gguf file");
  cmd->add_flag("--system", flags->system,
                "CPU, ISA features, chosen kernels, caches, memory and measured read bandwidth "
                "(with -m also the decode roofline)");
  cmd->add_flag("--membw", flags->membw,
                "only measure streaming-read memory bandwidth at 1 and -t threads");
  cmd->add_flag("--no-membw", flags->no_membw, "skip the bandwidth measurement of --system");
  cmd->add_option("--membw-mib", flags->membw_mib, "bandwidth buffer size in MiB (default 1024)");
  cmd->add_option("-t,--threads", flags->threads, "threads for the bandwidth test (0: all)");
  cmd->callback([flags] { ReportStatus(RunInfo(*flags)); });
}

}  // namespace jisu::cli
