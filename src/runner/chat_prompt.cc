#include "runner/chat_prompt.h"

#include "chat/chat_template.h"

namespace jisu {

Result<std::string> RenderChatPrompt(const Model& model, const nlohmann::ordered_json& messages,
                                     bool add_generation_prompt) {
  if (model.chat_template().empty()) {
    return Status::InvalidArgument("the model has no chat template");
  }
  auto tmpl = ChatTemplate::Parse(model.chat_template());
  if (!tmpl.ok()) return tmpl.status().WithContext("model chat template");
  ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.add_generation_prompt = add_generation_prompt;
  inputs.bos_token = model.bos_token();
  inputs.eos_token = model.eos_token();
  auto text = (*tmpl)->Render(inputs);
  if (!text.ok()) return text.status().WithContext("rendering chat template");
  return text;
}

Result<std::vector<int32_t>> TokenizeChatPrompt(const Model& model,
                                                const nlohmann::ordered_json& messages,
                                                bool add_generation_prompt) {
  JISU_ASSIGN_OR_RETURN(std::string text, RenderChatPrompt(model, messages, add_generation_prompt));
  return model.tokenizer().Encode(text, /*add_special=*/false);
}

}  // namespace jisu
