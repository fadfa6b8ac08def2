// Tokenizer::FromGguf: GGUF tokenizer metadata -> TokenizerSpec, following transformers 5.x's
// GGUF loader (integrations/gguf/gguf_tokenizer_mapping.py) so results match
// AutoTokenizer.from_pretrained(..., gguf_file=...):
//   - "gpt2": GPT2Tokenizer over the vocabulary (tokens not spelled in the byte alphabet are
//     respelled byte-level); the pre-tokenizer is GPT-2's ByteLevel regex unless `pre` names a
//     known split pattern (llama-bpe/llama3 family, qwen2 family), which then runs first;
//   - "llama": LlamaTokenizer (Metaspace "first", byte fallback), merges from the file or, when
//     absent, derived from the scores as transformers' generate_merges does; add_space_prefix
//     false (Gemma) turns the dummy prefix off, as transformers' Gemma converter does;
//   - token type 3 (control) -> special added tokens (byte-level: only those spelled in the
//     byte alphabet), 4 (user-defined) -> non-special added tokens; bos/eos/unk/pad ids name
//     special tokens as well;
//   - BOS/EOS are added as add_bos / add_eos say ("llama" defaults add_bos to true).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "core/utf8.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace jisu {
namespace {

constexpr int32_t kTypeControl = 3, kTypeUserDefined = 4;

std::optional<std::string_view> SplitPatternFor(const std::string& pre) {
  static const char* const kLlama3[] = {"llama3",  "llama-v3", "llama-bpe", "falcon3", "falcon-h1",
                                        "pixtral", "midm-2.0", "lfm2",      "dbrx",    "smaug-bpe"};
  static const char* const kQwen2[] = {"qwen2", "deepseek-r1-qwen", "kormo", "megrez"};
  for (const char* p : kLlama3) {
    if (pre == p) return kLlama3Pattern;
  }
  for (const char* p : kQwen2) {
    if (pre == p) return kQwen2Pattern;
  }
  return std::nullopt;
}

// transformers' generate_merges(vocab, scores): every split of every token into two vocabulary
// tokens, ordered by the token's score (descending), then by the lengths of the left and right
// parts (descending), then by token id and (left id, right id).
std::vector<std::pair<std::string, std::string>> MergesFromScores(
    const std::vector<std::string>& tokens, const std::vector<float>& scores,
    const std::unordered_map<std::string, int32_t>& vocab) {
  struct Candidate {
    float score;
    size_t left_len, right_len;
    int32_t left, right;
  };
  std::vector<Candidate> all;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string& tok = tokens[t];
    std::vector<Candidate> local;
    // Python slices by code point.
    for (size_t cut = 1; cut < tok.size(); ++cut) {
      if ((static_cast<unsigned char>(tok[cut]) & 0xC0) == 0x80) continue;
      auto l = vocab.find(tok.substr(0, cut));
      auto r = vocab.find(tok.substr(cut));
      if (l == vocab.end() || r == vocab.end()) continue;
      local.push_back(Candidate{scores[t], utf8::CountCodePoints(l->first),
                                utf8::CountCodePoints(r->first), l->second, r->second});
    }
    std::stable_sort(local.begin(), local.end(), [](const Candidate& a, const Candidate& b) {
      return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    all.insert(all.end(), local.begin(), local.end());
  }
  std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.left_len != b.left_len) return a.left_len > b.left_len;
    return a.right_len > b.right_len;
  });
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(all.size());
  for (const Candidate& c : all) merges.emplace_back(tokens[c.left], tokens[c.right]);
  return merges;
}

Result<std::unique_ptr<Tokenizer>> Load(const GgufTokenizerData& d) {
  if (d.tokens.empty()) return Status::InvalidArgument("GGUF tokenizer has no tokens");
  if (static_cast<int64_t>(d.tokens.size()) > kMaxVocabSize) {
    return Status::InvalidArgument("GGUF tokenizer has too many tokens");
  }
  const int32_t n = static_cast<int32_t>(d.tokens.size());
  if (!d.token_types.empty() && d.token_types.size() != d.tokens.size()) {
    return Status::InvalidArgument("token_type count differs from token count");
  }
  if (!d.scores.empty() && d.scores.size() != d.tokens.size()) {
    return Status::InvalidArgument("scores count differs from token count");
  }
  for (const auto& [name, id] : {std::pair{"bos", d.bos_id},
                                 {"eos", d.eos_id},
                                 {"unk", d.unk_id},
                                 {"pad", d.pad_id},
                                 {"eot", d.eot_id}}) {
    if (id && (*id < 0 || *id >= n)) {
      return Status::InvalidArgument(std::string(name) + "_token_id " + std::to_string(*id) +
                                     " is out of range");
    }
  }
  TokenizerSpec spec;
  const bool byte_level_model = d.model == "gpt2";
  if (byte_level_model) {
    spec.vocab.reserve(d.tokens.size());
    for (const std::string& t : d.tokens) {
      const std::string clean = utf8::Sanitize(t);
      if (byte_level::IsSpelled(clean)) {
        spec.vocab.push_back(clean);
      } else {
        std::string spelled;
        byte_level::SpellBytes(t, &spelled);
        spec.vocab.push_back(spelled);
      }
    }
  } else if (d.model == "llama") {
    spec.vocab = d.tokens;
  } else {
    return Status::Unsupported("GGUF tokenizer model '" + d.model + "'");
  }
  // A repeated token string would make two ids for one entry; keep the first.
  std::unordered_map<std::string, int32_t> index;
  index.reserve(spec.vocab.size());
  for (int32_t i = 0; i < n; ++i) {
    if (spec.vocab[i].empty()) continue;
    if (!index.emplace(spec.vocab[i], i).second) spec.vocab[i].clear();
  }
  if (!d.merges.empty()) {
    spec.merges.reserve(d.merges.size());
    for (const std::string& m : d.merges) {
      const size_t space = m.find(' ');
      if (space == std::string::npos) {
        return Status::InvalidArgument("GGUF merge '" + m + "' is not two tokens");
      }
      spec.merges.emplace_back(m.substr(0, space), m.substr(space + 1));
    }
  } else if (!byte_level_model && !d.scores.empty()) {
    spec.merges = MergesFromScores(spec.vocab, d.scores, index);
  }

  if (byte_level_model) {
    spec.decoder = Decoder::ByteLevel();
    if (auto pattern = SplitPatternFor(d.pre)) {
      JISU_ASSIGN_OR_RETURN(spec.pre_tokenizer, PreTokenizer::SplitThenByteLevel(*pattern, false));
    } else {
      JISU_ASSIGN_OR_RETURN(spec.pre_tokenizer, PreTokenizer::ByteLevel(false, true));
    }
  } else {
    // add_space_prefix = false (Gemma's files): no dummy "▁" before the text, and none to
    // strip when decoding (transformers' Gemma converter, llama.cpp).
    const bool prefix = d.add_space_prefix.value_or(true);
    JISU_ASSIGN_OR_RETURN(
        spec.pre_tokenizer,
        PreTokenizer::Metaspace("\xE2\x96\x81",
                                prefix ? PrependScheme::kFirst : PrependScheme::kNever, false));
    JISU_ASSIGN_OR_RETURN(spec.decoder, Decoder::SentencePiece(prefix));
    spec.bpe = BpeOptions{std::nullopt, /*fuse_unk=*/true, /*byte_fallback=*/true, false};
  }

  auto add = [&](int32_t id, bool special) {
    for (const AddedToken& t : spec.added) {
      if (t.id == id) return;
    }
    if (spec.vocab[id].empty()) return;
    AddedToken a;
    a.id = id;
    a.content = spec.vocab[id];
    a.special = special;
    a.normalized = false;
    spec.added.push_back(std::move(a));
  };
  for (int32_t i = 0; i < n && !d.token_types.empty(); ++i) {
    if (d.token_types[i] == kTypeControl) {
      if (!byte_level_model || byte_level::IsSpelled(spec.vocab[i])) add(i, true);
    }
  }
  for (const auto& id : {d.bos_id, d.eos_id, d.unk_id, d.pad_id}) {
    if (id) add(*id, true);
  }
  for (int32_t i = 0; i < n && !d.token_types.empty(); ++i) {
    if (d.token_types[i] == kTypeUserDefined) add(i, false);
  }
  spec.bos = d.bos_id;
  spec.eos = d.eos_id;
  const bool add_bos = d.add_bos.value_or(d.model == "llama");
  const bool add_eos = d.add_eos.value_or(false);
  if (add_bos && d.bos_id) spec.prefix_ids.push_back(*d.bos_id);
  if (add_eos && d.eos_id) spec.suffix_ids.push_back(*d.eos_id);
  if (d.eot_id) spec.extra_stop_ids.push_back(*d.eot_id);
  return BpeTokenizer::Create(std::move(spec));
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const GgufTokenizerData& data) {
  try {
    auto result = Load(data);
    if (!result.ok()) return result.status().WithContext("loading GGUF tokenizer");
    return result;
  } catch (const std::exception& e) {
    return Status::Corrupt(std::string("loading GGUF tokenizer: ") + e.what());
  }
}

}  // namespace jisu
