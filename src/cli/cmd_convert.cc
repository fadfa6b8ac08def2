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
  const auto type = DTypeFromName(f.type);
  if (!type) return Status::InvalidArgument("--type must be f32, f16, bf16, q8_0, q4_0 or q4_1");
  options.type = *type;
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
  cmd->add_option("--type", flags->type, "f32, f16, bf16, q8_0, q4_0, q4_1");
  cmd->callback([flags] { ReportStatus(RunConvert(*flags)); });
}

}  // namespace jisu::cli
