#include "grammar/token_vocab.h"

#include <algorithm>

namespace jisu::grammar {

std::shared_ptr<const TokenVocab> TokenVocab::FromTokenizer(const Tokenizer& tokenizer,
                                                            int32_t vocab_size,
                                                            std::span<const int32_t> eos_ids) {
  auto v = std::make_shared<TokenVocab>();
  v->size_ = vocab_size;
  v->bytes_.resize(static_cast<size_t>(vocab_size));
  const int32_t n = std::min(vocab_size, tokenizer.vocab_size());
  for (int32_t id = 0; id < n; ++id) {
    std::string b = tokenizer.DecodePiece(id, /*first=*/false);
    if (b.size() > kMaxTokenBytes) continue;
    if (tokenizer.IsSpecial(id)) {
      if (!b.empty()) v->specials_.emplace_back(id, std::move(b));
      continue;
    }
    std::string first = tokenizer.DecodePiece(id, /*first=*/true);
    if (first != b && first.size() <= kMaxTokenBytes) v->first_.emplace_back(id, std::move(first));
    v->bytes_[id] = std::move(b);
  }
  v->eos_.assign(eos_ids.begin(), eos_ids.end());
  v->Finish();
  return v;
}

std::shared_ptr<const TokenVocab> TokenVocab::FromBytes(
    std::vector<std::string> tokens, std::vector<int32_t> eos_ids,
    std::vector<std::pair<int32_t, std::string>> first_overrides,
    std::vector<std::pair<int32_t, std::string>> specials) {
  auto v = std::make_shared<TokenVocab>();
  v->size_ = static_cast<int32_t>(tokens.size());
  v->bytes_ = std::move(tokens);
  for (auto& [id, text] : specials) {
    if (id < 0 || id >= v->size_ || text.empty() || text.size() > kMaxTokenBytes) continue;
    v->bytes_[id].clear();
    v->specials_.emplace_back(id, std::move(text));
  }
  for (int32_t e : eos_ids) {
    if (e >= 0 && e < v->size_) v->bytes_[e].clear();
  }
  for (std::string& b : v->bytes_) {
    if (b.size() > kMaxTokenBytes) b.clear();
  }
  v->eos_ = std::move(eos_ids);
  v->first_ = std::move(first_overrides);
  v->Finish();
  return v;
}

std::shared_ptr<const TokenVocab> TokenVocab::WithSpecials(
    const std::shared_ptr<const TokenVocab>& base, std::span<const std::string> names) {
  std::vector<std::pair<int32_t, std::string>> add;
  for (const auto& [id, text] : base->specials_) {
    if (!base->is_eos(id) && std::find(names.begin(), names.end(), text) != names.end()) {
      add.emplace_back(id, text);
    }
  }
  if (add.empty()) return base;
  auto v = std::make_shared<TokenVocab>();
  v->size_ = base->size_;
  v->bytes_ = base->bytes_;
  for (auto& [id, text] : add) v->bytes_[id] = std::move(text);
  v->eos_ = base->eos_;
  v->first_ = base->first_;
  v->specials_ = base->specials_;
  v->Finish();
  return v;
}

bool TokenVocab::is_eos(int32_t id) const {
  return std::find(eos_.begin(), eos_.end(), id) != eos_.end();
}

void TokenVocab::Finish() {
  for (int32_t e : eos_) {
    if (e >= 0 && e < size_) bytes_[e].clear();  // EOS is never text
  }
  for (int32_t id = 0; id < size_; ++id) {
    if (!bytes_[id].empty()) sorted_.push_back(id);
  }
  std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) {
    return bytes_[a] < bytes_[b] || (bytes_[a] == bytes_[b] && a < b);
  });
  lcp_.assign(sorted_.size(), 0);
  for (size_t i = 1; i < sorted_.size(); ++i) {
    const std::string& a = bytes_[sorted_[i - 1]];
    const std::string& b = bytes_[sorted_[i]];
    uint32_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    lcp_[i] = k;
  }
  for (int32_t id : sorted_) max_len_ = std::max(max_len_, bytes_[id].size());
}

}  // namespace jisu::grammar
