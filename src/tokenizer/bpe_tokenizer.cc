#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>

#include "core/utf8.h"

namespace jisu {

bool IsEndOfTurnMarker(const std::string& token) {
  static const char* const kMarkers[] = {"<|eot_id|>",    "<|eom_id|>",    "<|end_of_text|>",
                                         "<|im_end|>",    "<|endoftext|>", "<|end|>",
                                         "<end_of_turn>", "</s>"};
  for (const char* m : kMarkers) {
    if (token == m) return true;
  }
  return false;
}

Result<std::unique_ptr<Tokenizer>> BpeTokenizer::Create(TokenizerSpec spec) {
  if (static_cast<int64_t>(spec.vocab.size()) > kMaxVocabSize) {
    return Status::InvalidArgument("vocabulary too large");
  }
  const int32_t model_size = static_cast<int32_t>(spec.vocab.size());
  JISU_ASSIGN_OR_RETURN(BpeModel model,
                        BpeModel::Create(std::move(spec.vocab), spec.merges, std::move(spec.bpe)));
  int32_t vocab_size = model_size;
  std::vector<AddedToken> raw, normalized;
  std::vector<std::string> raw_contents, normalized_contents;
  std::unordered_map<int32_t, AddedToken> by_id;
  std::unordered_map<std::string, int32_t> by_content;
  for (const AddedToken& t : spec.added) {
    if (t.id < 0 || t.id >= kMaxVocabSize) {
      return Status::InvalidArgument("added token '" + t.content + "' has id " +
                                     std::to_string(t.id) + " out of range");
    }
    if (t.content.empty()) return Status::InvalidArgument("added token with empty content");
    vocab_size = std::max(vocab_size, t.id + 1);
    by_id[t.id] = t;
    by_content[t.content] = t.id;
  }
  if (static_cast<int64_t>(vocab_size) - static_cast<int64_t>(model_size) -
          static_cast<int64_t>(by_id.size()) >
      kMaxIdHoles) {
    return Status::InvalidArgument("added token ids leave too many unused ids");
  }
  // Matching order follows tokenizers: special tokens first, then the others, each in the
  // order given; ties between equal contents cannot happen (by_content dedups).
  std::vector<const AddedToken*> ordered;
  for (const auto& t : spec.added) {
    if (t.special) ordered.push_back(&t);
  }
  for (const auto& t : spec.added) {
    if (!t.special) ordered.push_back(&t);
  }
  std::unordered_map<std::string, bool> seen;
  for (const AddedToken* t : ordered) {
    if (seen[t->content]) continue;
    seen[t->content] = true;
    const AddedToken& final_token = by_id[by_content[t->content]];
    if (final_token.normalized) {
      normalized.push_back(final_token);
      normalized_contents.push_back(spec.normalizer.Apply(utf8::Sanitize(final_token.content)));
    } else {
      raw.push_back(final_token);
      raw_contents.push_back(final_token.content);
    }
  }
  for (int32_t id : spec.prefix_ids) {
    if (id < 0 || id >= vocab_size)
      return Status::InvalidArgument("post-processor id out of range");
  }
  for (int32_t id : spec.suffix_ids) {
    if (id < 0 || id >= vocab_size)
      return Status::InvalidArgument("post-processor id out of range");
  }
  std::unique_ptr<BpeTokenizer> tok(
      new BpeTokenizer(std::move(model), AddedTokenMatcher(raw, std::move(raw_contents)),
                       AddedTokenMatcher(normalized, std::move(normalized_contents))));
  tok->normalizer_ = std::move(spec.normalizer);
  tok->pre_tokenizer_ = std::move(spec.pre_tokenizer);
  tok->decoder_ = std::move(spec.decoder);
  tok->added_by_id_ = std::move(by_id);
  tok->added_by_content_ = std::move(by_content);
  tok->prefix_ids_ = std::move(spec.prefix_ids);
  tok->suffix_ids_ = std::move(spec.suffix_ids);
  tok->vocab_size_ = vocab_size;
  auto valid = [&](std::optional<int32_t> id) { return id && *id >= 0 && *id < vocab_size; };
  if (valid(spec.bos)) tok->bos_ = spec.bos;
  if (valid(spec.eos)) tok->eos_ = spec.eos;
  if (tok->eos_) tok->stop_ids_.push_back(*tok->eos_);
  for (const auto& [id, t] : tok->added_by_id_) {
    if (t.special && IsEndOfTurnMarker(t.content)) tok->stop_ids_.push_back(id);
  }
  tok->AddStopIds(spec.extra_stop_ids);
  std::sort(tok->stop_ids_.begin(), tok->stop_ids_.end());
  tok->stop_ids_.erase(std::unique(tok->stop_ids_.begin(), tok->stop_ids_.end()),
                       tok->stop_ids_.end());
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

void BpeTokenizer::AddStopIds(std::span<const int32_t> ids) {
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size_) continue;
    if (std::find(stop_ids_.begin(), stop_ids_.end(), id) == stop_ids_.end()) {
      stop_ids_.push_back(id);
    }
  }
  std::sort(stop_ids_.begin(), stop_ids_.end());
}

const AddedToken* BpeTokenizer::Added(int32_t id) const {
  auto it = added_by_id_.find(id);
  return it == added_by_id_.end() ? nullptr : &it->second;
}

void BpeTokenizer::EncodeText(const Segment& segment, std::vector<int32_t>* out) const {
  std::vector<Piece> pieces;
  pieces.push_back(Piece{segment.text, segment.at_start});
  pre_tokenizer_.Apply(&pieces);
  for (const Piece& p : pieces) model_.Tokenize(p.text, out);
}

std::vector<int32_t> BpeTokenizer::Encode(std::string_view text, bool add_special) const {
  const std::string clean = utf8::Sanitize(text);
  std::vector<int32_t> ids;
  if (add_special) ids = prefix_ids_;
  std::vector<Segment> raw_segments, norm_segments;
  raw_matcher_.Split(clean, /*at_start=*/true, &raw_segments);
  for (const Segment& seg : raw_segments) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    const std::string normalized = normalizer_.empty() ? seg.text : normalizer_.Apply(seg.text);
    norm_segments.clear();
    norm_matcher_.Split(normalized, seg.at_start, &norm_segments);
    for (const Segment& ns : norm_segments) {
      if (ns.id >= 0) {
        ids.push_back(ns.id);
      } else {
        EncodeText(ns, &ids);
      }
    }
  }
  if (add_special) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  return ids;
}

std::string BpeTokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size_) continue;
    if (const AddedToken* t = Added(id)) {
      if (skip_special && t->special) continue;
      tokens.push_back(t->content);
      continue;
    }
    if (id >= model_.size() || model_.Token(id).empty()) continue;
    tokens.push_back(model_.Token(id));
  }
  return decoder_.Decode(std::move(tokens));
}

std::string BpeTokenizer::DecodePiece(int32_t id, bool first) const {
  if (id < 0 || id >= vocab_size_) return {};
  if (const AddedToken* t = Added(id)) return decoder_.DecodePiece(t->content, first);
  if (id >= model_.size() || model_.Token(id).empty()) return {};
  return decoder_.DecodePiece(model_.Token(id), first);
}

std::string BpeTokenizer::TokenBytes(int32_t id) const {
  // Without a decoder, Decode joins tokens with spaces; a token's own bytes are its text.
  if (decoder_.empty()) return IdToToken(id);
  return DecodePiece(id, false);
}

std::optional<int32_t> BpeTokenizer::TokenToId(std::string_view token) const {
  auto it = added_by_content_.find(std::string(token));
  if (it != added_by_content_.end()) return it->second;
  return model_.Find(token);
}

std::string BpeTokenizer::IdToToken(int32_t id) const {
  if (id < 0 || id >= vocab_size_) return {};
  if (const AddedToken* t = Added(id)) return t->content;
  if (id >= model_.size()) return {};
  return model_.Token(id);
}

bool BpeTokenizer::IsSpecial(int32_t id) const {
  const AddedToken* t = Added(id);
  return t != nullptr && t->special;
}

}  // namespace jisu
