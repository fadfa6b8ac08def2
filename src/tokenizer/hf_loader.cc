// Tokenizer::FromHuggingFace: tokenizer.json (+ tokenizer_config.json) -> TokenizerSpec.
//
// Without a config, the tokenizer.json pipeline is used as written (what the `tokenizers`
// library does). With a config, transformers 5.x's AutoTokenizer behavior is emulated:
//   - tokenizer_class LlamaTokenizer[Fast], Qwen2Tokenizer[Fast] and GPT2Tokenizer[Fast] rebuild
//     normalizer / pre-tokenizer / decoder / BPE options as those classes' __init__ do (only the
//     vocabulary, merges and post-processor come from tokenizer.json); other classes
//     (PreTrainedTokenizerFast, ...) keep the file's pipeline, and so does a LlamaTokenizer
//     whose tokenizer.json is byte-level;
//   - bos/eos/unk/pad and additional special tokens named by the config (or the class defaults)
//     become special added tokens when they are in the vocabulary;
//   - add_bos_token / add_eos_token in the config are ignored: transformers 5.x pops them
//     when a tokenizer.json exists (4.x used them to rebuild the post-processor), so the
//     file's post-processor alone decides what add_special adds.
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/utf8.h"
#include "format/json_util.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/json_util.h"
#include "tokenizer/tokenizer.h"

namespace jisu {

using json_util::Json;

namespace {

struct PostProcessor {
  bool present = false;
  std::vector<int32_t> prefix, suffix;
};

Status ParseTemplateItem(const Json& item, const Json& special_tokens, bool* is_sequence,
                         std::vector<int32_t>* ids) {
  *is_sequence = false;
  if (item.is_string()) {
    // "$A", "$A:0", "<s>", "<s>:1"
    std::string s = item.get<std::string>();
    const size_t colon = s.rfind(':');
    if (colon != std::string::npos && colon > 0) s = s.substr(0, colon);
    if (!s.empty() && s[0] == '$') {
      *is_sequence = true;
      return Status::Ok();
    }
    if (!special_tokens.is_object() || !special_tokens.contains(s)) {
      return Status::InvalidArgument("template names unknown special token '" + s + "'");
    }
    const Json& st = special_tokens[s];
    if (!st.is_object() || !st.contains("ids") || !st["ids"].is_array()) {
      return Status::InvalidArgument("special token '" + s + "' without ids");
    }
    for (const Json& id : st["ids"]) {
      if (!id.is_number_integer()) return Status::InvalidArgument("special token id not an int");
      const int64_t v = id.get<int64_t>();
      if (v < 0 || v >= kMaxVocabSize)
        return Status::InvalidArgument("special token id out of range");
      ids->push_back(static_cast<int32_t>(v));
    }
    return Status::Ok();
  }
  if (!item.is_object()) return Status::InvalidArgument("template item is not an object");
  if (item.contains("Sequence")) {
    *is_sequence = true;
    return Status::Ok();
  }
  if (item.contains("SpecialToken")) {
    std::string name;
    JISU_RETURN_IF_ERROR(json_util::GetString(item["SpecialToken"], "id", &name, true));
    return ParseTemplateItem(Json(name), special_tokens, is_sequence, ids);
  }
  return Status::InvalidArgument("unknown template item");
}

Status ParsePostProcessor(const Json& j, int depth, PostProcessor* pp) {
  if (depth > 16) return Status::InvalidArgument("nesting too deep");
  if (j.is_null()) return Status::Ok();
  if (!j.is_object()) return Status::InvalidArgument("not an object");
  pp->present = true;
  std::string type;
  JISU_RETURN_IF_ERROR(json_util::GetString(j, "type", &type, true));
  if (type == "ByteLevel") return Status::Ok();
  if (type == "Sequence") {
    if (!j.contains("processors") || !j["processors"].is_array()) {
      return Status::InvalidArgument("Sequence without 'processors' array");
    }
    for (const Json& sub : j["processors"]) {
      PostProcessor inner;
      JISU_RETURN_IF_ERROR(ParsePostProcessor(sub, depth + 1, &inner));
      pp->prefix.insert(pp->prefix.begin(), inner.prefix.begin(), inner.prefix.end());
      pp->suffix.insert(pp->suffix.end(), inner.suffix.begin(), inner.suffix.end());
    }
    return Status::Ok();
  }
  if (type == "TemplateProcessing") {
    const Json special = j.contains("special_tokens") ? j["special_tokens"] : Json::object();
    Json single = j.contains("single") ? j["single"] : Json();
    if (single.is_string()) {
      Json items = Json::array();
      const std::string s = single.get<std::string>();
      size_t pos = 0;
      while (pos < s.size()) {
        while (pos < s.size() && s[pos] == ' ') ++pos;
        size_t end = s.find(' ', pos);
        if (end == std::string::npos) end = s.size();
        if (end > pos) items.push_back(s.substr(pos, end - pos));
        pos = end;
      }
      single = items;
    }
    if (!single.is_array()) return Status::InvalidArgument("TemplateProcessing without 'single'");
    bool seen_sequence = false;
    for (const Json& item : single) {
      bool is_sequence = false;
      std::vector<int32_t> ids;
      JISU_RETURN_IF_ERROR(ParseTemplateItem(item, special, &is_sequence, &ids));
      if (is_sequence) {
        seen_sequence = true;
        continue;
      }
      auto& target = seen_sequence ? pp->suffix : pp->prefix;
      target.insert(target.end(), ids.begin(), ids.end());
    }
    return Status::Ok();
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    for (const char* key : {"cls", "sep"}) {
      if (!j.contains(key) || !j[key].is_array() || j[key].size() != 2 ||
          !j[key][1].is_number_integer()) {
        return Status::InvalidArgument(type + " without a valid '" + key + "'");
      }
      const int64_t v = j[key][1].get<int64_t>();
      if (v < 0 || v >= kMaxVocabSize) return Status::InvalidArgument("id out of range");
      (std::string(key) == "cls" ? pp->prefix : pp->suffix).push_back(static_cast<int32_t>(v));
    }
    return Status::Ok();
  }
  return Status::Unsupported("post_processor type '" + type + "'");
}

Status ParseVocab(const Json& vocab, std::vector<std::string>* out) {
  if (!vocab.is_object()) return Status::InvalidArgument("model.vocab is not an object");
  if (static_cast<int64_t>(vocab.size()) > kMaxVocabSize) {
    return Status::InvalidArgument("model.vocab is too large");
  }
  int64_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer()) {
      return Status::InvalidArgument("vocab id of '" + it.key() + "' is not an integer");
    }
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= kMaxVocabSize) {
      return Status::InvalidArgument("vocab id " + std::to_string(id) + " of '" + it.key() +
                                     "' is out of range");
    }
    if (it.key().empty()) return Status::InvalidArgument("empty token in vocab");
    max_id = std::max(max_id, id);
  }
  if (max_id + 1 - static_cast<int64_t>(vocab.size()) > kMaxIdHoles) {
    return Status::InvalidArgument("vocab ids are too sparse");
  }
  out->assign(static_cast<size_t>(max_id + 1), std::string());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    std::string& slot = (*out)[it.value().get<int64_t>()];
    if (!slot.empty()) {
      return Status::InvalidArgument("vocab id " + std::to_string(it.value().get<int64_t>()) +
                                     " is used twice");
    }
    slot = it.key();
  }
  return Status::Ok();
}

Status ParseMerges(const Json& merges, std::vector<std::pair<std::string, std::string>>* out) {
  if (merges.is_null()) return Status::Ok();
  if (!merges.is_array()) return Status::InvalidArgument("model.merges is not an array");
  out->reserve(merges.size());
  for (const Json& m : merges) {
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos) {
        return Status::InvalidArgument("merge '" + s + "' is not two tokens");
      }
      out->emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out->emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return Status::InvalidArgument("merge entry is neither \"a b\" nor [a, b]");
    }
  }
  return Status::Ok();
}

Status ParseAddedToken(const Json& t, AddedToken* out) {
  if (!t.is_object()) return Status::InvalidArgument("added token is not an object");
  JISU_RETURN_IF_ERROR(json_util::GetString(t, "content", &out->content, true));
  out->normalized = !out->special;
  JISU_RETURN_IF_ERROR(json_util::GetBool(t, "special", &out->special));
  out->normalized = !out->special;
  JISU_RETURN_IF_ERROR(json_util::GetBool(t, "normalized", &out->normalized));
  JISU_RETURN_IF_ERROR(json_util::GetBool(t, "lstrip", &out->lstrip));
  JISU_RETURN_IF_ERROR(json_util::GetBool(t, "rstrip", &out->rstrip));
  JISU_RETURN_IF_ERROR(json_util::GetBool(t, "single_word", &out->single_word));
  if (out->content.empty()) return Status::InvalidArgument("added token with empty content");
  return Status::Ok();
}

Result<Json> ParseJson(std::string_view text, const char* what) {
  JISU_ASSIGN_OR_RETURN(Json j, ParseUntrustedJson<Json>(text, what));
  if (!j.is_object()) return Status::Corrupt(std::string(what) + " is not a JSON object");
  return j;
}

// A named special token from the config: absent (use the class default), null, or a string.
struct Named {
  bool present = false;
  std::optional<std::string> value;
};

Status GetNamed(const Json& config, const char* key, Named* out) {
  if (!config.contains(key)) return Status::Ok();
  out->present = true;
  return json_util::GetTokenString(config, key, &out->value);
}

enum class TokenizerClass { kGeneric, kLlama, kQwen2, kGpt2 };

TokenizerClass ClassOf(std::string name) {
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Fast") == 0) {
    name.resize(name.size() - 4);
  }
  if (name == "LlamaTokenizer") return TokenizerClass::kLlama;
  if (name == "Qwen2Tokenizer") return TokenizerClass::kQwen2;
  if (name == "GPT2Tokenizer") return TokenizerClass::kGpt2;
  return TokenizerClass::kGeneric;
}

// The id a token string maps to: an added token, else the model vocabulary.
std::optional<int32_t> IdOf(const TokenizerSpec& spec, const std::string& token) {
  for (const AddedToken& t : spec.added) {
    if (t.content == token) return t.id;
  }
  for (size_t i = 0; i < spec.vocab.size(); ++i) {
    if (spec.vocab[i] == token) return static_cast<int32_t>(i);
  }
  return std::nullopt;
}

// Without a config, bos/eos are guessed from common names (and the template's first token).
std::optional<int32_t> GuessId(const TokenizerSpec& spec,
                               std::initializer_list<const char*> names) {
  for (const char* n : names) {
    for (const AddedToken& t : spec.added) {
      if (t.content == n) return t.id;
    }
  }
  return std::nullopt;
}

Result<std::unique_ptr<Tokenizer>> Load(std::string_view tokenizer_json,
                                        std::string_view tokenizer_config_json) {
  JISU_ASSIGN_OR_RETURN(Json j, ParseJson(tokenizer_json, "tokenizer.json"));
  Json config;
  const bool has_config = !tokenizer_config_json.empty();
  if (has_config) {
    JISU_ASSIGN_OR_RETURN(config, ParseJson(tokenizer_config_json, "tokenizer_config.json"));
  }

  TokenizerSpec spec;
  // --- model
  if (!j.contains("model") || !j["model"].is_object()) {
    return Status::InvalidArgument("tokenizer.json has no 'model' object");
  }
  const Json& model = j["model"];
  std::string model_type = "BPE";
  JISU_RETURN_IF_ERROR(json_util::GetString(model, "type", &model_type).WithContext("model"));
  if (model_type != "BPE") return Status::Unsupported("model type '" + model_type + "'");
  if (!model.contains("vocab")) return Status::InvalidArgument("model has no 'vocab'");
  JISU_RETURN_IF_ERROR(ParseVocab(model["vocab"], &spec.vocab));
  JISU_RETURN_IF_ERROR(
      ParseMerges(model.contains("merges") ? model["merges"] : Json(), &spec.merges));
  if (json_util::Has(model, "unk_token")) {
    std::string model_unk;
    JISU_RETURN_IF_ERROR(json_util::GetString(model, "unk_token", &model_unk).WithContext("model"));
    spec.bpe.unk_token = model_unk;
  }
  JISU_RETURN_IF_ERROR(json_util::GetBool(model, "fuse_unk", &spec.bpe.fuse_unk));
  JISU_RETURN_IF_ERROR(json_util::GetBool(model, "byte_fallback", &spec.bpe.byte_fallback));
  JISU_RETURN_IF_ERROR(json_util::GetBool(model, "ignore_merges", &spec.bpe.ignore_merges));
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    std::string v;
    JISU_RETURN_IF_ERROR(json_util::GetString(model, key, &v).WithContext("model"));
    if (!v.empty()) return Status::Unsupported(std::string("BPE ") + key);
  }
  // --- added tokens
  if (json_util::Has(j, "added_tokens")) {
    if (!j["added_tokens"].is_array()) return Status::InvalidArgument("added_tokens not an array");
    for (const Json& t : j["added_tokens"]) {
      AddedToken a;
      int64_t id = -1;
      JISU_RETURN_IF_ERROR(json_util::GetInt(t, "id", &id, true).WithContext("added_tokens"));
      if (id < 0 || id >= kMaxVocabSize) {
        return Status::InvalidArgument("added token id " + std::to_string(id) + " out of range");
      }
      a.id = static_cast<int32_t>(id);
      JISU_RETURN_IF_ERROR(ParseAddedToken(t, &a).WithContext("added_tokens"));
      spec.added.push_back(std::move(a));
    }
  }
  // --- pipeline as written
  JISU_ASSIGN_OR_RETURN(spec.normalizer,
                        Normalizer::FromJson(j.contains("normalizer") ? j["normalizer"] : Json()));
  JISU_ASSIGN_OR_RETURN(
      spec.pre_tokenizer,
      PreTokenizer::FromJson(j.contains("pre_tokenizer") ? j["pre_tokenizer"] : Json()));
  JISU_ASSIGN_OR_RETURN(spec.decoder,
                        Decoder::FromJson(j.contains("decoder") ? j["decoder"] : Json()));
  PostProcessor pp;
  JISU_RETURN_IF_ERROR(
      ParsePostProcessor(j.contains("post_processor") ? j["post_processor"] : Json(), 0, &pp)
          .WithContext("post_processor"));
  spec.prefix_ids = pp.prefix;
  spec.suffix_ids = pp.suffix;

  if (!has_config) {
    spec.bos = pp.prefix.empty() ? GuessId(spec, {"<|begin_of_text|>", "<s>", "<bos>"})
                                 : std::optional<int32_t>(pp.prefix.front());
    spec.eos = GuessId(spec, {"<|end_of_text|>", "</s>", "<|endoftext|>", "<eos>", "<|im_end|>"});
    return BpeTokenizer::Create(std::move(spec));
  }

  // --- transformers' view
  std::string class_name;
  JISU_RETURN_IF_ERROR(json_util::GetString(config, "tokenizer_class", &class_name)
                           .WithContext("tokenizer_config.json"));
  TokenizerClass cls = ClassOf(class_name);
  // transformers 5 loads a LlamaTokenizer[Fast] whose tokenizer.json mentions ByteLevel
  // (DeepSeek's repositories) as it is written: the class would impose Metaspace.
  if (cls == TokenizerClass::kLlama &&
      tokenizer_json.find("\"ByteLevel\"") != std::string_view::npos) {
    cls = TokenizerClass::kGeneric;
  }
  Named bos, eos, unk, pad;
  JISU_RETURN_IF_ERROR(GetNamed(config, "bos_token", &bos).WithContext("tokenizer_config.json"));
  JISU_RETURN_IF_ERROR(GetNamed(config, "eos_token", &eos).WithContext("tokenizer_config.json"));
  JISU_RETURN_IF_ERROR(GetNamed(config, "unk_token", &unk).WithContext("tokenizer_config.json"));
  JISU_RETURN_IF_ERROR(GetNamed(config, "pad_token", &pad).WithContext("tokenizer_config.json"));
  std::optional<bool> add_prefix_space, legacy;
  if (json_util::Has(config, "add_prefix_space")) {
    bool v = false;
    JISU_RETURN_IF_ERROR(json_util::GetBool(config, "add_prefix_space", &v));
    add_prefix_space = v;
  }
  if (json_util::Has(config, "legacy")) {
    bool v = false;
    JISU_RETURN_IF_ERROR(json_util::GetBool(config, "legacy", &v));
    legacy = v;
  }
  auto set_default = [](Named* n, std::optional<std::string> v) {
    if (!n->present) n->value = std::move(v);
  };
  switch (cls) {
    case TokenizerClass::kLlama: {
      const bool aps = add_prefix_space.value_or(true);
      const PrependScheme scheme =
          !aps ? PrependScheme::kNever
               : (legacy.value_or(false) ? PrependScheme::kAlways : PrependScheme::kFirst);
      spec.normalizer = Normalizer();
      JISU_ASSIGN_OR_RETURN(spec.pre_tokenizer,
                            PreTokenizer::Metaspace("\xE2\x96\x81", scheme, /*split=*/false));
      JISU_ASSIGN_OR_RETURN(spec.decoder, Decoder::SentencePiece(aps));
      spec.bpe = BpeOptions{std::nullopt, /*fuse_unk=*/true, /*byte_fallback=*/true, false};
      set_default(&unk, "<unk>");
      set_default(&bos, "<s>");
      set_default(&eos, "</s>");
      break;
    }
    case TokenizerClass::kQwen2: {
      spec.normalizer = Normalizer::Nfc();
      JISU_ASSIGN_OR_RETURN(
          spec.pre_tokenizer,
          PreTokenizer::SplitThenByteLevel(kQwen2Pattern, add_prefix_space.value_or(false)));
      spec.decoder = Decoder::ByteLevel();
      spec.bpe = BpeOptions{};
      set_default(&unk, "<|endoftext|>");
      set_default(&bos, std::nullopt);
      set_default(&eos, "<|endoftext|>");
      set_default(&pad, "<|endoftext|>");
      break;
    }
    case TokenizerClass::kGpt2: {
      spec.normalizer = Normalizer();
      JISU_ASSIGN_OR_RETURN(spec.pre_tokenizer,
                            PreTokenizer::ByteLevel(add_prefix_space.value_or(false), true));
      spec.decoder = Decoder::ByteLevel();
      spec.bpe = BpeOptions{};
      set_default(&unk, "<|endoftext|>");
      set_default(&bos, "<|endoftext|>");
      set_default(&eos, "<|endoftext|>");
      break;
    }
    case TokenizerClass::kGeneric:
      break;
  }

  // Added tokens from the config override those of tokenizer.json with the same id.
  if (json_util::Has(config, "added_tokens_decoder")) {
    const Json& atd = config["added_tokens_decoder"];
    if (!atd.is_object()) return Status::InvalidArgument("added_tokens_decoder not an object");
    for (auto it = atd.begin(); it != atd.end(); ++it) {
      int64_t id = -1;
      const std::string& key = it.key();
      if (key.empty() || key.size() > 9 ||
          key.find_first_not_of("0123456789") != std::string::npos) {
        return Status::InvalidArgument("added_tokens_decoder key '" + key + "' is not an id");
      }
      id = std::stoll(key);
      if (id >= kMaxVocabSize) return Status::InvalidArgument("added_tokens_decoder id too large");
      AddedToken a;
      a.id = static_cast<int32_t>(id);
      JISU_RETURN_IF_ERROR(ParseAddedToken(it.value(), &a).WithContext("added_tokens_decoder"));
      bool replaced = false;
      for (AddedToken& existing : spec.added) {
        if (existing.id == a.id) {
          existing = a;
          replaced = true;
        }
      }
      if (!replaced) spec.added.push_back(a);
    }
  }
  // Named and additional special tokens become special added tokens.
  std::vector<std::string> named;
  for (const Named* n : std::initializer_list<const Named*>{&bos, &eos, &unk, &pad}) {
    if (n->value) named.push_back(*n->value);
  }
  for (const char* key : {"additional_special_tokens", "extra_special_tokens"}) {
    if (!json_util::Has(config, key)) continue;
    const Json& list = config[key];
    if (!list.is_array()) continue;  // a dict form names model-specific roles; ignore
    for (const Json& t : list) {
      if (t.is_string()) {
        named.push_back(t.get<std::string>());
      } else if (t.is_object() && t.contains("content") && t["content"].is_string()) {
        named.push_back(t["content"].get<std::string>());
      }
    }
  }
  for (const std::string& name : named) {
    bool known = false;
    for (const AddedToken& t : spec.added) known = known || t.content == name;
    if (known || name.empty()) continue;
    for (size_t i = 0; i < spec.vocab.size(); ++i) {
      if (spec.vocab[i] == name) {
        AddedToken a;
        a.content = name;
        a.id = static_cast<int32_t>(i);
        a.special = true;
        a.normalized = false;
        spec.added.push_back(a);
        break;
      }
    }
  }
  // bos / eos ids and the post-processor.
  if (bos.value) spec.bos = IdOf(spec, *bos.value);
  if (eos.value) spec.eos = IdOf(spec, *eos.value);
  // transformers 5.x drops add_bos_token / add_eos_token from the config whenever a
  // tokenizer.json exists, so the file's post-processor alone decides what add_special adds
  // (a missing one adds nothing).
  return BpeTokenizer::Create(std::move(spec));
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromHuggingFace(
    std::string_view tokenizer_json, std::string_view tokenizer_config_json) {
  try {
    auto result = Load(tokenizer_json, tokenizer_config_json);
    if (!result.ok()) return result.status().WithContext("loading tokenizer");
    return result;
  } catch (const std::exception& e) {
    // Every access above is checked; this only guards against an oversight (or bad_alloc).
    return Status::Corrupt(std::string("loading tokenizer: ") + e.what());
  }
}

}  // namespace jisu
