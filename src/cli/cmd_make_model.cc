// `jisu make-model`: writes a GGUF with random weights at a named shape or a config.json's.
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/mapped_file.h"
#include "format/json_util.h"
#include "testmodel/dummy_model.h"
#include "testmodel/model_shapes.h"

namespace jisu::cli {
namespace {

struct MakeModelFlags {
  std::string shape, config, out, type = "q4_0";
  uint64_t seed = 0;
  int layers = 0;
  int threads = 0;
  bool list = false;
};

Result<ModelConfig> ConfigFromFlags(const MakeModelFlags& f) {
  if (f.shape.empty() == f.config.empty()) {
    return Status::InvalidArgument("give exactly one of --shape NAME and --config config.json");
  }
  ModelConfig c;
  if (!f.shape.empty()) {
    JISU_ASSIGN_OR_RETURN(c, NamedModelShape(f.shape));
  } else {
    JISU_ASSIGN_OR_RETURN(std::string text, ReadTextFile(f.config));
    JISU_ASSIGN_OR_RETURN(const nlohmann::json j,
                          ParseUntrustedJson<nlohmann::json>(text, f.config));
    if (!j.is_object()) {
      return Status::InvalidArgument(f.config + ": not a JSON object");
    }
    auto r = ModelConfigFromHf(j);
    if (!r.ok()) return r.status().WithContext(f.config);
    c = *r;
  }
  // The files are for side-by-side runs with llama.cpp, whose llama architecture has no sliding
  // window: such a file would mean one model to jisu and another to llama.cpp.
  if (c.sliding_window) {
    return Status::Unsupported("sliding-window (Mistral) shapes are not supported by make-model");
  }
  if (f.layers < 0) return Status::InvalidArgument("--layers must be positive");
  if (f.layers > 0) c.num_layers = f.layers;
  return c;
}

Status RunMakeModel(const MakeModelFlags& f) {
  if (f.list) {
    for (const std::string& name : NamedModelShapeNames()) {
      JISU_ASSIGN_OR_RETURN(ModelConfig c, NamedModelShape(name));
      std::printf("%-16s %s\n", name.c_str(), c.Describe().c_str());
    }
    return Status::Ok();
  }
  if (f.out.empty()) return Status::InvalidArgument("-o OUT.gguf is required");
  DummyModelOptions o;
  JISU_ASSIGN_OR_RETURN(o.config, ConfigFromFlags(f));
  const auto type = DTypeFromName(f.type);
  if (!type) {
    return Status::InvalidArgument("--type must be f32, f16, bf16, q8_0, q4_0 or q4_1 (got '" +
                                   f.type + "')");
  }
  o.type = *type;
  o.seed = f.seed;
  JISU_ASSIGN_OR_RETURN(o.threads, ThreadsFromFlag(f.threads));
  o.name = (f.shape.empty() ? std::string("custom") : f.shape) + "-random";
  std::printf("writing %s: %s, %s, %s of tensors, seed %llu\n", f.out.c_str(),
              o.config.Describe().c_str(), f.type.c_str(),
              FormatBytes(DummyGgufTensorBytes(o)).c_str(),
              static_cast<unsigned long long>(o.seed));
  std::fflush(stdout);
  const auto start = std::chrono::steady_clock::now();
  JISU_RETURN_IF_ERROR(WriteDummyGguf(f.out, o));
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("wrote %s (%s, %.1f s)\n", f.out.c_str(), f.type.c_str(), secs);
  return Status::Ok();
}

}  // namespace

void RegisterMakeModel(CLI::App& app) {
  auto flags = std::make_shared<MakeModelFlags>();
  auto* cmd = app.add_subcommand(
      "make-model",
      "Write a GGUF with random weights at a named shape or a config.json's (for benchmarks)");
  cmd->add_option("--shape", flags->shape,
                  "built-in shape: tinyllama-1.1b, qwen2.5-0.5b, llama-3.2-1b, llama-3.1-8b, "
                  "qwen2.5-7b (--list shows them)");
  cmd->add_option("--config", flags->config, "Hugging Face config.json instead of --shape");
  cmd->add_option("-o,--output", flags->out, "output .gguf file");
  cmd->add_option("--type", flags->type,
                  "f32, f16, bf16, q8_0, q4_0, q4_1 (default q4_0; 4-bit files keep the output "
                  "head at q8_0)");
  cmd->add_option("--seed", flags->seed, "random seed (same seed, same file)");
  cmd->add_option("--layers", flags->layers, "override the number of layers");
  cmd->add_option("-t,--threads", flags->threads, "threads (0: all)");
  cmd->add_flag("--list", flags->list, "list the built-in shapes");
  cmd->callback([flags] { ReportStatus(RunMakeModel(*flags)); });
}

}  // namespace jisu::cli
