#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/mapped_file.h"
#include "eval/perplexity.h"
#include "kv/kv_cache.h"

namespace jisu::cli {
namespace {

struct PerplexityFlags {
  std::string model, file;
  int64_t ctx = 512;
  int64_t chunks = 0;
  int threads = 0;
  std::string kv_type = "f16";
  bool json = false;
  std::string top1_out;
  std::string matmul = "auto";
};

Status RunPerplexity(const PerplexityFlags& f) {
  if (f.file.empty()) return Status::InvalidArgument("-f FILE is required");
  JISU_ASSIGN_OR_RETURN(std::string text, ReadTextFile(f.file, 1u << 30));
  JISU_ASSIGN_OR_RETURN(int threads, ThreadsFromFlag(f.threads));
  GeneratorOptions options;
  JISU_ASSIGN_OR_RETURN(options.kv_type, ParseKvType(f.kv_type));
  JISU_ASSIGN_OR_RETURN(options.matmul, MatmulFromFlag(f.matmul));
  options.interleave = InterleaveFromEnv();
  JISU_ASSIGN_OR_RETURN(auto model, LoadModelFlag(f.model));
  ThreadPool pool(threads);
  auto progress = [&](int64_t chunk, double ppl) {
    if (!f.json) std::fprintf(stderr, "[%lld] %.4f\n", static_cast<long long>(chunk + 1), ppl);
  };
  JISU_ASSIGN_OR_RETURN(PerplexityResult r,
                        ComputePerplexity(*model, text, f.ctx, f.chunks, pool, options, progress));
  if (!f.top1_out.empty()) {
    std::FILE* out = std::fopen(f.top1_out.c_str(), "w");
    if (out == nullptr) return Status::InvalidArgument("cannot write " + f.top1_out);
    const std::string text_out = nlohmann::json(r.top1).dump() + "\n";
    const bool ok = std::fwrite(text_out.data(), 1, text_out.size(), out) == text_out.size();
    if (std::fclose(out) != 0 || !ok) return Status::Internal("writing " + f.top1_out + " failed");
  }
  if (f.json) {
    nlohmann::json out = {{"ppl", r.ppl},
                          {"mean_nll", r.mean_nll},
                          {"num_scored", r.num_scored},
                          {"chunks", r.num_chunks},
                          {"ctx", f.ctx},
                          {"seconds", r.seconds},
                          {"kv_type", f.kv_type},
                          {"matmul", MatmulPathName(options.matmul)}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("ppl = %.6f (%lld chunks of %lld tokens, %lld tokens scored, %.1f s)\n", r.ppl,
                static_cast<long long>(r.num_chunks), static_cast<long long>(f.ctx),
                static_cast<long long>(r.num_scored), r.seconds);
  }
  return Status::Ok();
}

}  // namespace

void RegisterPerplexity(CLI::App& app) {
  auto flags = std::make_shared<PerplexityFlags>();
  auto* cmd = app.add_subcommand("perplexity", "Perplexity of a text file");
  cmd->add_option("-m,--model", flags->model, "HF model folder or .gguf file");
  cmd->add_option("-f,--file", flags->file, "text file");
  cmd->add_option("--ctx", flags->ctx, "window length in tokens");
  cmd->add_option("--chunks", flags->chunks, "score only the first K windows (0 = all)");
  cmd->add_option("-t,--threads", flags->threads, "threads (0 = all)");
  cmd->add_option("--kv-type", flags->kv_type, kKvTypeHelp);
  cmd->add_option("--matmul", flags->matmul, kMatmulFlagHelp);
  cmd->add_flag("--json", flags->json, "print one JSON object");
  cmd->add_option("--top1-out", flags->top1_out,
                  "write the most likely token at every scored position (JSON array), for "
                  "top-1 agreement with a reference");
  cmd->callback([flags] { ReportStatus(RunPerplexity(*flags)); });
}

}  // namespace jisu::cli
