#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "convert/hf_to_gguf.h"

namespace jisu::cli {
namespace {

struct ConvertFlags {
  std::string model, out, type = "f16";
};

Status RunConvert(const ConvertFlags& f) {
  if (f.model.empty() || f.out.empty()) {
    return Status::InvalidArgument("-m HF_DIR and -o OUT.gguf are required");
  }
  ConvertOptions options;
  if (f.type == "q4_k_m") {
    options.type = DType::kQ4_K;
    options.mix = QuantMix::kQ4_K_M;
  } else {
    const auto type = DTypeFromName(f.type);
    if (!type || !(*type == DType::kF32 || *type == DType::kF16 || *type == DType::kBF16 ||
                   *type == DType::kQ8_0 || *type == DType::kQ4_0 || *type == DType::kQ4_1 ||
                   *type == DType::kQ2_K || *type == DType::kQ3_K || *type == DType::kQ4_K ||
                   *type == DType::kQ5_K || *type == DType::kQ6_K)) {
      return Status::InvalidArgument(
          "--type must be f32, f16, bf16, q8_0, q4_0, q4_1, q2_k, q3_k, q4_k, q5_k, q6_k or "
          "q4_k_m");
    }
    options.type = *type;
  }
  JISU_RETURN_IF_ERROR(ConvertHfToGguf(f.model, f.out, options));
  std::printf("wrote %s (%s)\n", f.out.c_str(), f.type.c_str());
  return Status::Ok();
}

}  // namespace

void RegisterConvert(CLI::App& app) {
  auto flags = std::make_shared<ConvertFlags>();
  auto* cmd = app.add_subcommand("convert", "Convert a Hugging Face model folder to GGUF");
  cmd->add_option("-m,--model", flags->model, "Hugging Face model folder");
  cmd->add_option("-o,--output", flags->out, "output .gguf file");
  cmd->add_option("--type", flags->type,
                  "f32, f16, bf16, q8_0, q4_0, q4_1, q2_k, q3_k, q4_k, q5_k, q6_k, q4_k_m");
  cmd->callback([flags] { ReportStatus(RunConvert(*flags)); });
}

}  // namespace jisu::cli
