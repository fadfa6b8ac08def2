#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/mapped_file.h"
#include "format/json_util.h"

namespace jisu::cli {
namespace {

struct ChatTemplateFlags {
  std::string model, template_file, messages_file, bos_token, eos_token;
  bool add_generation_prompt = false;
  bool bos_given = false, eos_given = false;  // set by the callback: "" is a valid token
};

Status RunChatTemplate(const ChatTemplateFlags& f) {
  if (f.messages_file.empty()) return Status::InvalidArgument("--messages FILE.json is required");
  JISU_ASSIGN_OR_RETURN(std::string messages_text, ReadTextFile(f.messages_file, 64u << 20));
  // ordered_json keeps key order, so tojson in templates prints as transformers does.
  JISU_ASSIGN_OR_RETURN(nlohmann::ordered_json messages,
                        ParseUntrustedJson<nlohmann::ordered_json>(messages_text, f.messages_file));
  // Accept either a bare array or an OpenAI-style {"messages": [...]} body.
  if (messages.is_object() && messages.contains("messages")) messages = messages["messages"];
  if (!messages.is_array()) {
    return Status::InvalidArgument(f.messages_file + ": expected an array of messages");
  }
  JISU_ASSIGN_OR_RETURN(std::string source, ChatTemplateFromFlag(f.template_file));

  ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.add_generation_prompt = f.add_generation_prompt;
  // A template file alone renders without a model; with -m (or no file: the default model)
  // the model supplies the special tokens, and its own template unless a file replaces it.
  if (!f.model.empty() || source.empty()) {
    LoadOptions options;
    options.vocab_only = true;
    options.chat_template = source;
    JISU_ASSIGN_OR_RETURN(auto model, LoadModelFlag(f.model, options));
    source = model->chat_template();
    if (source.empty()) {
      return Status::InvalidArgument(model->path() +
                                     " has no chat template; give one with --chat-template FILE");
    }
    inputs.bos_token = model->bos_token();
    inputs.eos_token = model->eos_token();
  }
  if (f.bos_given) inputs.bos_token = f.bos_token;
  if (f.eos_given) inputs.eos_token = f.eos_token;
  auto tmpl = ChatTemplate::Parse(source);
  if (!tmpl.ok()) return tmpl.status().WithContext("chat template");
  JISU_ASSIGN_OR_RETURN(std::string text, (*tmpl)->Render(inputs));
  std::fwrite(text.data(), 1, text.size(), stdout);
  return Status::Ok();
}

}  // namespace

void RegisterChatTemplate(CLI::App& app) {
  auto flags = std::make_shared<ChatTemplateFlags>();
  auto* cmd = app.add_subcommand("chat-template", "Render chat messages with a chat template");
  cmd->add_option("-m,--model", flags->model, "the model whose template and special tokens to use");
  cmd->add_option("--chat-template,--template", flags->template_file,
                  "Jinja template file, used instead of the model's own");
  cmd->add_option("--messages", flags->messages_file, "JSON file: array of {role, content}");
  cmd->add_flag("--add-generation-prompt", flags->add_generation_prompt);
  auto* bos = cmd->add_option("--bos-token", flags->bos_token, "bos_token value (default: -m's)");
  auto* eos = cmd->add_option("--eos-token", flags->eos_token, "eos_token value (default: -m's)");
  cmd->callback([flags, bos, eos] {
    flags->bos_given = bos->count() > 0;
    flags->eos_given = eos->count() > 0;
    ReportStatus(RunChatTemplate(*flags));
  });
}

}  // namespace jisu::cli
