// Turns chat messages into the prompt a model expects, with the model's own chat template and
// special tokens, and tokenizes it as transformers' apply_chat_template does (the template
// writes BOS itself, so no special tokens are added by the tokenizer).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "jisu/status.h"
#include "model/model.h"

namespace jisu {

Result<std::string> RenderChatPrompt(const Model& model, const nlohmann::ordered_json& messages,
                                     bool add_generation_prompt);

Result<std::vector<int32_t>> TokenizeChatPrompt(const Model& model,
                                                const nlohmann::ordered_json& messages,
                                                bool add_generation_prompt);

}  // namespace jisu
