// Canonical tensor names (GGUF's: "blk.3.attn_q.weight") and their Hugging Face equivalents
// ("model.layers.3.self_attn.q_proj.weight"). The loader asks for canonical names; the
// converter uses the same table in the other direction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/model_config.h"

namespace jisu {

// Hugging Face name for a canonical name; nullopt if the name has no HF counterpart. The norms
// are named by architecture: Llama's post_attention_layernorm is the FFN's input norm, Gemma's
// is the attention output's norm (pre_feedforward_layernorm is its FFN input norm).
std::optional<std::string> HfTensorName(const std::string& canonical,
                                        Architecture arch = Architecture::kLlama);
// Canonical name for a Hugging Face name; nullopt if unknown (e.g. rotary buffers).
std::optional<std::string> CanonicalFromHf(const std::string& hf,
                                           Architecture arch = Architecture::kLlama);

std::string LayerTensorName(int64_t layer, const char* suffix);  // "blk.<layer>.<suffix>"

}  // namespace jisu
