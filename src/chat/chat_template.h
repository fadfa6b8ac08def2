// Renders a model's chat template (a Jinja2 template from tokenizer_config.json or GGUF
// tokenizer.chat_template) the way transformers does: trim_blocks and lstrip_blocks on,
// `messages`, `add_generation_prompt`, `bos_token`, `eos_token`, extra variables (tools,
// documents, ...) available, `raise_exception(msg)` and `strftime_now(fmt)` defined.
// The Jinja subset is large enough for the real templates of Llama-2/3, Qwen2, Mistral,
// ChatML, Phi-3, Gemma and similar. Like transformers' apply_chat_template, message keys whose
// value is null are dropped and reasoning fields are aliased (reasoning_content / thinking /
// reasoning) before rendering. Rendering is bounded in time and memory (see jinja_interp.h).
#pragma once

#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "jisu/status.h"

namespace jisu {

// JSON values are ordered_json so object keys keep their order: templates print tool schemas
// and arguments with tojson, and transformers (Python dicts) keeps insertion order. A plain
// nlohmann::json converts implicitly (its keys are then in sorted order).
struct ChatTemplateInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // [{"role":..., ...}]
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  // More top-level variables (tools, documents, date_string, enable_thinking, ...). `tools`
  // and `documents` are None unless given here, as in transformers.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  // The local time strftime_now formats; unset: the current time. Tests fix it so that a
  // rendering compares with a reference rendered on another day.
  std::optional<std::tm> now;
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
