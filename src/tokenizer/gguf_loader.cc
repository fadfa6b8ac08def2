// Tokenizer::FromGguf: GGUF tokenizer metadata -> TokenizerSpec. A GGUF keeps the vocabulary,
// the merges and a few names; the text pipeline comes from what those names stand for. The
// reference is the family's own tokenizer.json (what the model was trained with, and what
// transformers gives on the model's folder), which transformers' GGUF loader
// (integrations/gguf/gguf_tokenizer_mapping.py) follows except where noted:
//   - "gpt2": byte-level BPE over the vocabulary (tokens not spelled in the byte alphabet are
//     respelled byte-level), with the normalizer, pre-tokenizer and ignore_merges of the family
//     that `pre` names (gguf_families.cc). transformers keeps only the split regex of a few
//     families and GPT-2's ByteLevel for the rest, losing Falcon's punctuation and digit
//     splits, DeepSeek's pre-tokenizers, the digit splits of StarCoder, SmolLM and Command-R,
//     and the NFC of Qwen, MPT and Command-R;
//   - "llama": SentencePiece BPE with byte fallback, merges from the file or, when absent,
//     derived from the scores as transformers' generate_merges does. The dummy prefix is the
//     legacy tokenizer.json's (Llama 2, Phi-3): Prepend "▁" to each text between added tokens,
//     then spaces -> "▁", so " " is "▁▁" as SentencePiece and llama.cpp make it. transformers 5
//     uses Metaspace here, which gives "▁" (it skips the prefix when the text starts with a
//     space). add_space_prefix false (Gemma's files) means no prefix, and Gemma's rules:
//     tokens of spaces respelled as "▁" runs (matched whole, as SentencePiece matches its
//     user-defined pieces) and merges ranked by position, as transformers' Gemma builder does;
//   - "gemma4": Gemma's pipeline over the file's merges, no BOS (transformers);
//   - token type 3 (control) -> special added tokens, 4 (user-defined) -> non-special added
//     tokens, matched in the text as the file spells them (MPT's runs of spaces, DeepSeek's
//     byte letters); bos/eos/unk/pad ids name special tokens as well;
//   - BOS/EOS are added as add_bos / add_eos say ("llama" defaults add_bos to true).
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/utf8.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/gguf_families.h"
#include "tokenizer/tokenizer.h"

namespace jisu {
namespace {

using Json = nlohmann::json;

constexpr int32_t kTypeControl = 3, kTypeUserDefined = 4;

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
  const bool gemma4 = d.model == "gemma4";
  // No dummy prefix (Gemma's files): Gemma's spelling of spaces and merge order, below.
  const bool gemma_rules = d.model == "llama" && !d.add_space_prefix.value_or(true);
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
  } else if (d.model == "llama" || gemma4) {
    spec.vocab = d.tokens;
    if (gemma_rules) {
      // llama.cpp's converter writes Gemma's "▁" runs as spaces; the normalized text has "▁".
      for (std::string& t : spec.vocab) {
        if (!t.empty() && t.find_first_not_of(' ') == std::string::npos) {
          const size_t len = t.size();
          t.clear();
          for (size_t i = 0; i < len; ++i) t += "\xE2\x96\x81";
        }
      }
    }
  } else {
    return Status::Unsupported("GGUF tokenizer model '" + d.model + "'");
  }
  // A repeated token string would make two ids for one entry; keep the last, as transformers'
  // vocabulary dict does. Command-R lists a raw U+200D early and its byte-level spelling later:
  // the later one is the merges' token.
  std::unordered_map<std::string, int32_t> index;
  index.reserve(spec.vocab.size());
  for (int32_t i = 0; i < n; ++i) {
    if (spec.vocab[i].empty()) continue;
    auto [it, fresh] = index.emplace(spec.vocab[i], i);
    if (!fresh) {
      spec.vocab[it->second].clear();
      it->second = i;
    }
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
  } else if (gemma_rules) {
    // Gemma's scores do not follow its merge order (its user-defined runs of "▁" score
    // -1000); the file's order does (transformers' Gemma builder).
    std::vector<float> position(spec.vocab.size());
    for (size_t i = 0; i < position.size(); ++i) position[i] = -static_cast<float>(i);
    spec.merges = MergesFromScores(spec.vocab, position, index);
  } else if (!byte_level_model && !d.scores.empty()) {
    spec.merges = MergesFromScores(spec.vocab, d.scores, index);
  }

  const std::string meta = "\xE2\x96\x81";
  const Json replace_spaces = {
      {"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", meta}};
  if (byte_level_model) {
    spec.decoder = Decoder::ByteLevel();
    JISU_ASSIGN_OR_RETURN(GgufPipeline pipeline, ByteLevelPipelineFor(d.pre));
    spec.normalizer = std::move(pipeline.normalizer);
    spec.pre_tokenizer = std::move(pipeline.pre_tokenizer);
    spec.bpe.ignore_merges = pipeline.ignore_merges;
  } else if (gemma_rules || gemma4) {
    JISU_ASSIGN_OR_RETURN(spec.normalizer, Normalizer::FromJson(replace_spaces));
    JISU_ASSIGN_OR_RETURN(spec.decoder, Decoder::SentencePiece(false));
    std::optional<std::string> unk;
    if (index.count("<unk>")) unk = "<unk>";
    spec.bpe = BpeOptions{unk, /*fuse_unk=*/true, /*byte_fallback=*/true, false};
  } else {
    // The legacy Llama tokenizer.json: every text between added tokens gets the dummy "▁".
    const Json legacy = {
        {"type", "Sequence"},
        {"normalizers", Json::array({{{"type", "Prepend"}, {"prepend", meta}}, replace_spaces})}};
    JISU_ASSIGN_OR_RETURN(spec.normalizer, Normalizer::FromJson(legacy));
    JISU_ASSIGN_OR_RETURN(spec.decoder, Decoder::SentencePiece(true));
    spec.bpe = BpeOptions{std::nullopt, /*fuse_unk=*/true, /*byte_fallback=*/true, false};
  }

  // Added tokens are matched in the text as the file spells them. For byte-level files that is
  // the tokenizer.json's content (MPT's runs of spaces, "<|im start|>"), not the respelled
  // vocabulary entry, which only decoding uses.
  auto add = [&](int32_t id, bool special, bool normalized = false) {
    for (const AddedToken& t : spec.added) {
      if (t.id == id) return;
    }
    AddedToken a;
    a.id = id;
    a.content = byte_level_model ? utf8::Sanitize(d.tokens[id]) : spec.vocab[id];
    if (a.content.empty()) return;
    a.special = special;
    a.normalized = normalized;
    spec.added.push_back(std::move(a));
  };
  for (int32_t i = 0; i < n && !d.token_types.empty(); ++i) {
    if (d.token_types[i] == kTypeControl) add(i, true);
  }
  for (const auto& id : {d.bos_id, d.eos_id, d.unk_id, d.pad_id}) {
    if (id) add(*id, true);
  }
  for (int32_t i = 0; i < n && !d.token_types.empty(); ++i) {
    if (d.token_types[i] != kTypeUserDefined) continue;
    if (gemma_rules && spec.vocab[i] != d.tokens[i]) {
      // Gemma's runs of "▁" are user-defined pieces, which SentencePiece (and llama.cpp) match
      // whole, longest first, in the normalized text. transformers' Gemma builder leaves them
      // to the merges instead, which splits "▁▁▁▁▁b" as "▁▁ ▁▁▁ b" where SentencePiece gives
      // "▁▁▁▁ ▁b"; SentencePiece is the reference.
      add(i, false, /*normalized=*/true);
      continue;
    }
    add(i, false);
  }
  spec.bos = d.bos_id;
  spec.eos = d.eos_id;
  const bool add_bos = !gemma4 && d.add_bos.value_or(d.model == "llama");
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
