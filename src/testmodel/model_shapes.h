// Built-in model shapes (the published configs of well-known checkpoints) for tools that need
// real sizes without the weights: `jisu make-model` and dummy-weight benchmarks.
#pragma once

#include <string>
#include <vector>

#include "jisu/status.h"
#include "model/model_config.h"

namespace jisu {

// The names NamedModelShape accepts, in a stable order.
std::vector<std::string> NamedModelShapeNames();

// The config of a named shape ("tinyllama-1.1b", "llama-3.1-8b", ...); InvalidArgument naming
// the known shapes for anything else. rope_style is half-split (as from config.json).
Result<ModelConfig> NamedModelShape(const std::string& name);

}  // namespace jisu
