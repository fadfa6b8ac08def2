#include <cstdio>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "ops/cpu_features.h"

namespace jisu::cli {
namespace {

struct InfoFlags {
  std::string model;
};

Status RunInfo(const InfoFlags& f) {
  std::printf("jisu 0.1.0\n");
  std::printf("hardware threads: %u\n", std::thread::hardware_concurrency());
  const CpuFeatures& cpu = GetCpuFeatures();
  std::printf("cpu features: avx2+fma+f16c %s, avx512 %s, avx512-vnni %s, avx512-bf16 %s\n",
              cpu.avx2 ? "yes" : "no", cpu.avx512 ? "yes" : "no", cpu.avx512_vnni ? "yes" : "no",
              cpu.avx512_bf16 ? "yes" : "no");
  if (f.model.empty()) return Status::Ok();
  LoadOptions options;
  JISU_ASSIGN_OR_RETURN(auto model, LoadModelFlag(f.model, options));
  std::printf("model: %s (%s)\n", model->path().c_str(),
              model->format() == ModelFormat::kGguf ? "gguf" : "hugging face");
  std::printf("config: %s\n", model->config().Describe().c_str());
  std::printf("weights: %s, %s in matrices\n", model->weight_type().c_str(),
              FormatBytes(model->weights().MatrixBytes()).c_str());
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
  cmd->callback([flags] { ReportStatus(RunInfo(*flags)); });
}

}  // namespace jisu::cli
