#include "convert/spm_vocab.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "core/mapped_file.h"
#include "format/gguf_writer.h"
#include "format/json_util.h"
#include "model/model.h"
#include "tokenizer/spm_model.h"

namespace jisu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr float kAddedScore = -1000.0f;
constexpr float kPadScore = -10000.0f;
constexpr size_t kMaxModelBytes = 64u << 20;

// A JSON file of the folder, or null when absent; malformed JSON is an error.
Result<json> OptionalJson(const std::string& dir, const char* name) {
  const fs::path p = fs::path(dir) / name;
  if (!fs::exists(p)) return json();
  JISU_ASSIGN_OR_RETURN(std::string text, ReadTextFile(p.string()));
  JISU_ASSIGN_OR_RETURN(json j, ParseUntrustedJson<json>(text, name));
  if (!j.is_object()) return Status::Corrupt(std::string(name) + ": not a JSON object");
  return j;
}

// llama.cpp's does_token_look_special: <...> and a few spelled-out markers.
bool LooksSpecial(const std::string& t) {
  if (t.size() >= 2 && t.front() == '<' && t.back() == '>') return true;
  for (const char* m : {"<|", "|>", "<｜", "｜>"}) {
    if (t.find(m) != std::string::npos) return true;
  }
  return false;
}

std::string SpacesForMetaspace(std::string t) {
  const std::string meta = "\xe2\x96\x81";
  for (size_t p = t.find(meta); p != std::string::npos; p = t.find(meta, p + 1)) {
    t.replace(p, meta.size(), " ");
  }
  return t;
}

}  // namespace

bool PrefersSentencePieceVocab(const std::string& dir) {
  if (!fs::exists(fs::path(dir) / "tokenizer.model")) return false;
  auto tj = OptionalJson(dir, "tokenizer.json");
  if (!tj.ok() || tj->is_null()) return true;
  const json m = tj->value("model", json::object());
  // SentencePiece-style tokenizer.json files are BPE with byte fallback (or Unigram).
  return !m.is_object() || m.value("type", "") != "BPE" || m.value("byte_fallback", false);
}

Status AddSentencePieceVocab(const std::string& dir, const Model& model, GgufWriter& w) {
  JISU_ASSIGN_OR_RETURN(std::string bytes,
                        ReadTextFile((fs::path(dir) / "tokenizer.model").string(), kMaxModelBytes));
  JISU_ASSIGN_OR_RETURN(SpmModel spm, ParseSpmModel(bytes));
  if (spm.model_type != SpmModel::kBpe) {
    return Status::Unsupported(
        "tokenizer.model: SentencePiece model type " + std::to_string(spm.model_type) +
        " (only BPE, type 2, converts: a Unigram model needs its own tokenizer)");
  }
  const int64_t vocab = model.config().vocab_size;
  std::vector<std::string> tokens;
  std::vector<float> scores(static_cast<size_t>(vocab), kPadScore);
  std::vector<int32_t> types(static_cast<size_t>(vocab), SpmModel::kUnused);
  tokens.reserve(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) tokens.push_back("[PAD" + std::to_string(i) + "]");
  if (static_cast<int64_t>(spm.pieces.size()) > vocab) {
    return Status::Corrupt("tokenizer.model has " + std::to_string(spm.pieces.size()) +
                           " pieces, more than the model's vocabulary of " + std::to_string(vocab));
  }
  for (size_t i = 0; i < spm.pieces.size(); ++i) {
    const SpmModel::Piece& p = spm.pieces[i];
    tokens[i] = p.text;
    scores[i] = p.score;
    // As llama.cpp: unknown, control, unused and byte keep their type; the rest (user-defined
    // pieces included) are normal.
    const bool keeps = p.type == SpmModel::kUnknown || p.type == SpmModel::kControl ||
                       p.type == SpmModel::kUnused || p.type == SpmModel::kByte;
    types[i] = keeps ? p.type : SpmModel::kNormal;
  }
  auto place = [&](int64_t id, const std::string& text, int32_t type, const char* file) {
    if (id < 0 || id >= vocab) {
      return Status::Corrupt(std::string(file) + ": token id " + std::to_string(id) +
                             " is outside the model's vocabulary of " + std::to_string(vocab));
    }
    tokens[id] = text;
    scores[id] = kAddedScore;
    types[id] = type;
    return Status::Ok();
  };
  JISU_ASSIGN_OR_RETURN(json added, OptionalJson(dir, "added_tokens.json"));
  for (const auto& [text, id] : added.items()) {
    if (!id.is_number_integer()) return Status::Corrupt("added_tokens.json: bad id for " + text);
    JISU_RETURN_IF_ERROR(
        place(id.get<int64_t>(), text, SpmModel::kUserDefined, "added_tokens.json"));
  }
  JISU_ASSIGN_OR_RETURN(json config, OptionalJson(dir, "tokenizer_config.json"));
  if (config.is_object() && config.contains("added_tokens_decoder")) {
    const json& dec = config["added_tokens_decoder"];
    if (!dec.is_object()) return Status::Corrupt("tokenizer_config.json: bad added_tokens_decoder");
    for (const auto& [key, t] : dec.items()) {
      int64_t id = -1;
      try {
        size_t used = 0;
        id = std::stoll(key, &used);
        if (used != key.size()) id = -1;
      } catch (...) {
        id = -1;
      }
      if (id < 0 || !t.is_object() || !t.contains("content") || !t["content"].is_string()) {
        return Status::Corrupt("tokenizer_config.json: bad added token '" + key + "'");
      }
      const std::string content = t["content"].get<std::string>();
      const bool special =
          (t.contains("special") && t["special"].is_boolean() && t["special"].get<bool>()) ||
          LooksSpecial(content);
      JISU_RETURN_IF_ERROR(place(id, special ? content : SpacesForMetaspace(content),
                                 special ? SpmModel::kControl : SpmModel::kUserDefined,
                                 "tokenizer_config.json"));
    }
  }

  w.AddString("tokenizer.ggml.model", "llama");
  w.AddString("tokenizer.ggml.pre", "default");
  w.AddStringArray("tokenizer.ggml.tokens", tokens);
  w.AddF32Array("tokenizer.ggml.scores", scores);
  w.AddI32Array("tokenizer.ggml.token_type", types);

  // Special ids: the folder's own names for them (tokenizer_config/tokenizer.json, as the
  // loaded tokenizer resolved them), else the ids SentencePiece was trained with.
  const Tokenizer& tok = model.tokenizer();
  auto id_of = [&](const std::string& text, int32_t trained) -> std::optional<int32_t> {
    if (!text.empty()) {
      if (auto id = tok.TokenToId(text)) return id;
    }
    if (trained >= 0) return trained;
    return std::nullopt;
  };
  if (auto id = id_of(model.bos_token(), spm.bos_id)) w.AddU32("tokenizer.ggml.bos_token_id", *id);
  if (auto id = id_of(model.eos_token(), spm.eos_id)) w.AddU32("tokenizer.ggml.eos_token_id", *id);
  if (spm.unk_id >= 0) w.AddU32("tokenizer.ggml.unknown_token_id", spm.unk_id);
  if (spm.pad_id >= 0) w.AddU32("tokenizer.ggml.padding_token_id", spm.pad_id);
  const std::vector<int32_t> probe = tok.Encode("a", /*add_special=*/true);
  const bool adds_bos = tok.bos_id() && !probe.empty() && probe.front() == *tok.bos_id();
  const bool adds_eos = tok.eos_id() && !probe.empty() && probe.back() == *tok.eos_id();
  w.AddBool("tokenizer.ggml.add_bos_token", adds_bos);
  w.AddBool("tokenizer.ggml.add_eos_token", adds_eos);
  // llama.cpp assumes the dummy prefix for "llama" vocabularies; say so only when it is off.
  if (!spm.add_dummy_prefix) w.AddBool("tokenizer.ggml.add_space_prefix", false);
  if (!model.chat_template().empty()) w.AddString("tokenizer.chat_template", model.chat_template());
  return Status::Ok();
}

}  // namespace jisu
