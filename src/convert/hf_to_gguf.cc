#include "convert/hf_to_gguf.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "convert/spm_vocab.h"
#include "core/mapped_file.h"
#include "format/gguf_writer.h"
#include "format/json_util.h"
#include "model/arch/architectures.h"
#include "model/model.h"
#include "model/tensor_names.h"
#include "ops/quant.h"

namespace jisu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// llama.cpp's general.file_type: the mixes have their own codes.
uint32_t FileType(DType t, QuantMix mix) { return mix == QuantMix::kQ4_K_M ? 15 : GgufFileType(t); }

// Names the GGUF pre-tokenizer of a byte-level BPE tokenizer.json, or fails for ones we
// cannot name (a GGUF reader would otherwise split text differently than the original).
Result<std::string> PreTokenizerName(const json& pre) {
  if (!pre.is_object()) return Status::Unsupported("tokenizer.json: no pre_tokenizer");
  const std::string type = pre.value("type", "");
  if (type == "ByteLevel") {
    if (pre.value("use_regex", true)) return std::string("gpt-2");
  } else if (type == "Sequence" && pre.contains("pretokenizers") &&
             pre["pretokenizers"].is_array()) {
    const json& seq = pre["pretokenizers"];
    std::string regex;
    bool byte_level = false, digits = false;
    for (const json& p : seq) {
      const std::string t = p.value("type", "");
      if (t == "Split" && p.contains("pattern") && p["pattern"].is_object()) {
        regex = p["pattern"].value("Regex", "");
      } else if (t == "ByteLevel") {
        byte_level = true;
        if (p.value("use_regex", true) && regex.empty()) regex = "gpt-2";
      } else if (t == "Digits" && p.value("individual_digits", false)) {
        digits = true;
      }
    }
    if (byte_level && regex == kLlama3Regex) return std::string("llama-bpe");
    if (byte_level && regex == kQwen2Regex) return std::string("qwen2");
    if (byte_level && digits && regex == "gpt-2") return std::string("smollm");
    if (byte_level && regex == "gpt-2") return std::string("gpt-2");
  }
  return Status::Unsupported(
      "tokenizer.json: this pre-tokenizer has no GGUF name we know "
      "(supported: GPT-2, Llama-3, Qwen2, SmolLM byte-level BPE)");
}

Status AddTokenizer(const std::string& dir, const Model& model, GgufWriter& w) {
  if (PrefersSentencePieceVocab(dir)) return AddSentencePieceVocab(dir, model, w);
  JISU_ASSIGN_OR_RETURN(std::string text,
                        ReadTextFile((fs::path(dir) / "tokenizer.json").string()));
  JISU_ASSIGN_OR_RETURN(const json tj, ParseUntrustedJson<json>(text, "tokenizer.json"));
  if (!tj.is_object() || !tj.contains("model")) {
    return Status::Corrupt("tokenizer.json: not a tokenizer");
  }
  const json& m = tj["model"];
  if (m.value("type", "") != "BPE" || m.value("byte_fallback", false) || !m.contains("vocab") ||
      !m["vocab"].is_object()) {
    return Status::Unsupported(
        "convert: tokenizer.json is not byte-level BPE and the folder has no tokenizer.model "
        "(SentencePiece tokenizers convert from their tokenizer.model)");
  }
  JISU_ASSIGN_OR_RETURN(std::string pre, PreTokenizerName(tj.value("pre_tokenizer", json())));
  const int64_t vocab = model.config().vocab_size;
  std::vector<std::string> tokens(static_cast<size_t>(vocab));
  std::vector<int32_t> types(static_cast<size_t>(vocab), 1);
  std::vector<bool> seen(static_cast<size_t>(vocab), false);
  auto place = [&](const std::string& tok, int64_t id, int32_t type) -> Status {
    if (id < 0 || id >= vocab) {
      return Status::Corrupt("tokenizer.json: token id " + std::to_string(id) +
                             " is outside the model's vocabulary of " + std::to_string(vocab));
    }
    tokens[id] = tok;
    types[id] = type;
    seen[id] = true;
    return Status::Ok();
  };
  for (const auto& [tok, id] : m["vocab"].items()) {
    if (!id.is_number_integer()) return Status::Corrupt("tokenizer.json: bad vocab id");
    JISU_RETURN_IF_ERROR(place(tok, id.get<int64_t>(), 1));
  }
  if (tj.contains("added_tokens") && tj["added_tokens"].is_array()) {
    for (const json& a : tj["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
          !a.contains("content") || !a["content"].is_string()) {
        return Status::Corrupt("tokenizer.json: bad added token");
      }
      JISU_RETURN_IF_ERROR(place(a["content"].get<std::string>(), a["id"].get<int64_t>(),
                                 a.value("special", false) ? 3 : 4));
    }
  }
  for (int64_t i = 0; i < vocab; ++i) {
    if (!seen[i]) {  // padding rows of the embedding beyond the tokenizer's vocabulary
      tokens[i] = "[PAD" + std::to_string(i) + "]";
      types[i] = 5;
    }
  }
  std::vector<std::string> merges;
  if (m.contains("merges") && m["merges"].is_array()) {
    for (const json& mg : m["merges"]) {
      if (mg.is_string()) {
        merges.push_back(mg.get<std::string>());
      } else if (mg.is_array() && mg.size() == 2 && mg[0].is_string() && mg[1].is_string()) {
        merges.push_back(mg[0].get<std::string>() + " " + mg[1].get<std::string>());
      } else {
        return Status::Corrupt("tokenizer.json: bad merge entry");
      }
    }
  }
  w.AddString("tokenizer.ggml.model", "gpt2");
  w.AddString("tokenizer.ggml.pre", pre);
  w.AddStringArray("tokenizer.ggml.tokens", tokens);
  w.AddI32Array("tokenizer.ggml.token_type", types);
  w.AddStringArray("tokenizer.ggml.merges", merges);
  const Tokenizer& tok = model.tokenizer();
  auto token_id = [&](const std::string& t) -> std::optional<int32_t> {
    if (t.empty()) return std::nullopt;
    return tok.TokenToId(t);
  };
  if (auto bos = token_id(model.bos_token())) w.AddU32("tokenizer.ggml.bos_token_id", *bos);
  if (auto eos = token_id(model.eos_token())) {
    w.AddU32("tokenizer.ggml.eos_token_id", *eos);
  } else if (!model.eos_ids().empty()) {
    w.AddU32("tokenizer.ggml.eos_token_id", model.eos_ids().front());
  }
  // Other generation-ending ids (e.g. <|endoftext|> besides <|im_end|>) as eot.
  for (int32_t id : model.eos_ids()) {
    if (token_id(model.eos_token()) != id) {
      w.AddU32("tokenizer.ggml.eot_token_id", id);
      break;
    }
  }
  const std::vector<int32_t> probe = tok.Encode("a", /*add_special=*/true);
  const bool adds_bos = tok.bos_id() && !probe.empty() && probe.front() == *tok.bos_id();
  w.AddBool("tokenizer.ggml.add_bos_token", adds_bos);
  w.AddBool("tokenizer.ggml.add_eos_token", false);
  if (!model.chat_template().empty()) w.AddString("tokenizer.chat_template", model.chat_template());
  return Status::Ok();
}

Status AddMatrix(GgufWriter& w, const std::string& name, const WeightMatrix& m, DType target,
                 const std::vector<int64_t>* row_order) {
  if (!RowBytes(target, m.cols)) {  // rows not a multiple of the block
    switch (target) {
      case DType::kQ2_K:
      case DType::kQ3_K:
        target = DType::kQ4_0;
        break;
      case DType::kQ4_K:
        target = DType::kQ4_1;
        break;
      case DType::kQ5_K:
      case DType::kQ6_K:
        target = DType::kQ8_0;
        break;
      default:
        target = DType::kF16;
    }
    if (!RowBytes(target, m.cols)) target = DType::kF16;
  }
  const uint64_t out_row = *RowBytes(target, m.cols);
  std::vector<uint8_t> data(out_row * m.rows);
  std::vector<float> row(static_cast<size_t>(m.cols));
  for (int64_t r = 0; r < m.rows; ++r) {
    const int64_t src = row_order ? (*row_order)[r] : r;
    DequantizeRow(m.dtype, static_cast<const uint8_t*>(m.data) + src * m.row_bytes, row.data(),
                  m.cols);
    QuantizeRow(target, row.data(), data.data() + r * out_row, m.cols);
  }
  w.AddTensor(name, target, {m.rows, m.cols}, std::move(data));
  return Status::Ok();
}

void AddVector(GgufWriter& w, const std::string& name, const std::vector<float>& v,
               const std::vector<int64_t>* order = nullptr) {
  std::vector<uint8_t> data(v.size() * sizeof(float));
  for (size_t i = 0; i < v.size(); ++i) {
    const float x = order ? v[(*order)[i]] : v[i];
    std::memcpy(data.data() + i * sizeof(float), &x, sizeof(float));
  }
  w.AddTensor(name, DType::kF32, {static_cast<int64_t>(v.size())}, std::move(data));
}

}  // namespace

bool UsesMoreBits(int64_t layer, int64_t num_layers) {
  return layer < num_layers / 8 || layer >= 7 * num_layers / 8 || (layer - num_layers / 8) % 3 == 2;
}

std::vector<int64_t> InterleavedRopeRowOrder(int64_t rows, int64_t head_dim) {
  std::vector<int64_t> order(static_cast<size_t>(rows));
  const int64_t half = head_dim / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t head = r / head_dim, j = r % head_dim;
    order[r] = head * head_dim + (j % 2) * half + j / 2;
  }
  return order;
}

Status ConvertHfToGguf(const std::string& hf_dir, const std::string& out_path,
                       const ConvertOptions& options) {
  const DType t = options.type;
  if (t != DType::kF32 && t != DType::kF16 && t != DType::kBF16 && t != DType::kQ8_0 &&
      t != DType::kQ4_0 && t != DType::kQ4_1 && t != DType::kQ2_K && t != DType::kQ3_K &&
      t != DType::kQ4_K && t != DType::kQ5_K && t != DType::kQ6_K) {
    return Status::InvalidArgument("convert: unsupported output type " + std::string(DTypeName(t)));
  }
  if (options.mix == QuantMix::kQ4_K_M && t != DType::kQ4_K) {
    return Status::InvalidArgument("convert: the Q4_K_M mix needs type q4_k");
  }
  std::error_code ec;
  if (!fs::is_directory(hf_dir, ec)) {
    return Status::InvalidArgument(hf_dir + " is not a Hugging Face model folder");
  }
  JISU_ASSIGN_OR_RETURN(auto model, Model::Load(hf_dir));
  const ModelConfig& c = model->config();
  if (const auto check = FindArchitecture(c.arch).check_gguf_expressible) {
    JISU_RETURN_IF_ERROR(check(c).WithContext("convert"));
  }
  GgufWriter w;
  AddModelConfigToGguf(c, w);
  w.AddString("general.name", fs::path(hf_dir).lexically_normal().filename().string());
  w.AddU32("general.file_type", FileType(t, options.mix));
  w.AddU32("general.quantization_version", 2);
  JISU_RETURN_IF_ERROR(AddTokenizer(hf_dir, *model, w));

  const ModelWeights& mw = model->weights();
  // As llama.cpp's converter: Q and K rows permuted for interleaved rotation where the
  // architecture's GGUF files have them so.
  const bool permute = FindArchitecture(c.arch).gguf_permutes_qk;
  const std::vector<int64_t> q_order = InterleavedRopeRowOrder(c.q_dim(), c.head_dim);
  const std::vector<int64_t> k_order = InterleavedRopeRowOrder(c.kv_dim(), c.head_dim);
  const bool four_bit = t == DType::kQ4_0 || t == DType::kQ4_1;
  const bool k_quant = t == DType::kQ2_K || t == DType::kQ3_K || t == DType::kQ4_K ||
                       t == DType::kQ5_K || t == DType::kQ6_K;
  const DType head_type = four_bit ? DType::kQ8_0 : k_quant ? DType::kQ6_K : t;

  JISU_RETURN_IF_ERROR(AddMatrix(w, "token_embd.weight", mw.embedding, t, nullptr));
  AddVector(w, "output_norm.weight", mw.final_norm);
  if (!c.tie_word_embeddings) {
    JISU_RETURN_IF_ERROR(AddMatrix(w, "output.weight", mw.lm_head, head_type, nullptr));
  }
  if (c.rope_scaling.type == RopeScaling::Type::kLlama3) {
    // Factors f with scaled_inv_freq = inv_freq / f, which is what readers divide by.
    ModelConfig unscaled = c;
    unscaled.rope_scaling = RopeScaling{};
    const std::vector<float> base = RopeInverseFrequencies(unscaled);
    const std::vector<float> scaled = RopeInverseFrequencies(c);
    std::vector<float> factors(base.size());
    for (size_t i = 0; i < base.size(); ++i) factors[i] = base[i] / scaled[i];
    AddVector(w, "rope_freqs.weight", factors);
  }
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const LayerWeights& l = mw.layers[i];
    auto n = [i](const char* s) { return LayerTensorName(i, s); };
    const DType more_bits =
        options.mix == QuantMix::kQ4_K_M && UsesMoreBits(i, c.num_layers) ? DType::kQ6_K : t;
    AddVector(w, n("attn_norm.weight"), l.attn_norm);
    JISU_RETURN_IF_ERROR(AddMatrix(w, n("attn_q.weight"), l.wq, t, permute ? &q_order : nullptr));
    JISU_RETURN_IF_ERROR(AddMatrix(w, n("attn_k.weight"), l.wk, t, permute ? &k_order : nullptr));
    JISU_RETURN_IF_ERROR(AddMatrix(w, n("attn_v.weight"), l.wv, more_bits, nullptr));
    if (c.attention_bias) {
      AddVector(w, n("attn_q.bias"), l.bq, permute ? &q_order : nullptr);
      AddVector(w, n("attn_k.bias"), l.bk, permute ? &k_order : nullptr);
      AddVector(w, n("attn_v.bias"), l.bv);
    }
    if (!l.q_norm.empty()) {
      AddVector(w, n("attn_q_norm.weight"), l.q_norm);
      AddVector(w, n("attn_k_norm.weight"), l.k_norm);
    }
    JISU_RETURN_IF_ERROR(AddMatrix(w, n("attn_output.weight"), l.wo, t, nullptr));
    if (!l.post_attn_norm.empty()) AddVector(w, n("post_attention_norm.weight"), l.post_attn_norm);
    AddVector(w, n("ffn_norm.weight"), l.ffn_norm);
    JISU_RETURN_IF_ERROR(AddMatrix(w, n("ffn_gate.weight"), l.w_gate, t, nullptr));
    JISU_RETURN_IF_ERROR(AddMatrix(w, n("ffn_up.weight"), l.w_up, t, nullptr));
    JISU_RETURN_IF_ERROR(AddMatrix(w, n("ffn_down.weight"), l.w_down, more_bits, nullptr));
    if (!l.post_ffn_norm.empty()) AddVector(w, n("post_ffw_norm.weight"), l.post_ffn_norm);
  }
  return w.Write(out_path);
}

}  // namespace jisu
