#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"

namespace jisu::cli {
namespace {

struct TokenizeFlags {
  std::string model, prompt, file;
  bool json = false;
  bool no_bos = false;
};

Status RunTokenize(const TokenizeFlags& f) {
  JISU_ASSIGN_OR_RETURN(std::string text, PromptFromFlags(f.prompt, f.file));
  LoadOptions options;
  options.vocab_only = true;
  JISU_ASSIGN_OR_RETURN(auto model, LoadModelFlag(f.model, options));
  const Tokenizer& tok = model->tokenizer();
  const std::vector<int32_t> ids = tok.Encode(text, /*add_special=*/!f.no_bos);
  if (f.json) {
    std::printf("%s\n", nlohmann::json(ids).dump().c_str());
    return Status::Ok();
  }
  for (int32_t id : ids) {
    const std::string piece = nlohmann::json(tok.IdToToken(id))
                                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::printf("%6d -> %s\n", id, piece.c_str());
  }
  return Status::Ok();
}

}  // namespace

void RegisterTokenize(CLI::App& app) {
  auto flags = std::make_shared<TokenizeFlags>();
  auto* cmd = app.add_subcommand("tokenize", "Print the token ids of a text");
  cmd->add_option("-m,--model", flags->model, "HF model folder or .gguf file (vocab-only is fine)");
  cmd->add_option("-p,--prompt", flags->prompt, "text");
  cmd->add_option("-f,--file", flags->file, "read the text from a file");
  cmd->add_flag("--json", flags->json, "print the ids as a JSON array");
  cmd->add_flag("--no-bos", flags->no_bos, "add no special tokens (BOS/EOS)");
  cmd->callback([flags] { ReportStatus(RunTokenize(*flags)); });
}

}  // namespace jisu::cli
