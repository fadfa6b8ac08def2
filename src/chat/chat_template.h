// Renders a model's chat template (a Jinja2 template from tokenizer_config.json or GGUF
// tokenizer.chat_template) the way transformers does: trim_blocks and lstrip_blocks on,
// `messages`, `add_generation_prompt`, `bos_token`, `eos_token`, extra variables (tools,
// documents, ...) available, `raise_exception(msg)` and `strftime_now(fmt)` defined.
// The Jinja subset is large enough for the real templates of Llama-2/3, Qwen2, Mistral,
// ChatML, Phi-3, Gemma and similar.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "jisu/status.h"

namespace jisu {

struct ChatTemplateInputs {
  nlohmann::json messages = nlohmann::json::array();  // [{"role":..., "content":...}, ...]
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  nlohmann::json extra = nlohmann::json::object();  // more top-level variables (tools, ...)
};

class ChatTemplate {
 public:
  // Parses the template; a syntax error names line and column.
  static Result<std::unique_ptr<ChatTemplate>> Parse(const std::string& source);
  virtual ~ChatTemplate() = default;
  // Renders; a runtime error (raise_exception, bad types, runaway loops) returns a Status.
  virtual Result<std::string> Render(const ChatTemplateInputs& inputs) const = 0;
};

}  // namespace jisu
