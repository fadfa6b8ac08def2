#include "tokenizer/bpe_model.h"

#include <cstdio>
#include <queue>

#include "core/utf8.h"

namespace jisu {

BpeModel::BpeModel(BpeModel&& o) noexcept { *this = std::move(o); }

BpeModel& BpeModel::operator=(BpeModel&& o) noexcept {
  id_to_token_ = std::move(o.id_to_token_);
  token_to_id_ = std::move(o.token_to_id_);
  merges_ = std::move(o.merges_);
  options_ = std::move(o.options_);
  unk_id_ = o.unk_id_;
  std::copy(std::begin(o.byte_ids_), std::end(o.byte_ids_), std::begin(byte_ids_));
  cache_.clear();
  return *this;
}

Result<BpeModel> BpeModel::Create(std::vector<std::string> id_to_token,
                                  const std::vector<std::pair<std::string, std::string>>& merges,
                                  BpeOptions options) {
  BpeModel m;
  m.id_to_token_ = std::move(id_to_token);
  m.token_to_id_.reserve(m.id_to_token_.size());
  for (size_t i = 0; i < m.id_to_token_.size(); ++i) {
    if (m.id_to_token_[i].empty()) continue;
    m.token_to_id_.emplace(m.id_to_token_[i], static_cast<int32_t>(i));
  }
  m.options_ = std::move(options);
  if (m.options_.unk_token) {
    m.unk_id_ = m.Find(*m.options_.unk_token);
    if (!m.unk_id_) {
      return Status::InvalidArgument("unk_token '" + *m.options_.unk_token +
                                     "' is not in the vocabulary");
    }
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    const auto id = m.Find(name);
    m.byte_ids_[b] = id ? *id : -1;
  }
  m.merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const auto ia = m.Find(a), ib = m.Find(b), inew = m.Find(a + b);
    if (!ia || !ib || !inew) {
      return Status::InvalidArgument("merge " + std::to_string(rank) + " ('" + a + "' '" + b +
                                     "') uses a token that is not in the vocabulary");
    }
    // A repeated pair keeps its last rank, as tokenizers' HashMap collect does.
    m.merges_[Key(*ia, *ib)] = Merge{static_cast<int32_t>(rank), *inew};
  }
  return m;
}

std::optional<int32_t> BpeModel::Find(std::string_view token) const {
  auto it = token_to_id_.find(token);
  if (it == token_to_id_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::Tokenize(std::string_view word, std::vector<int32_t>* out) const {
  if (word.empty()) return;
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  if (options_.ignore_merges) {
    if (auto id = Find(word)) ids.push_back(*id);
  }
  if (ids.empty()) MergeWord(word, &ids);
  out->insert(out->end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kCacheMaxEntries) cache_.clear();
    cache_.emplace(std::string(word), std::move(ids));
  }
}

void BpeModel::MergeWord(std::string_view word, std::vector<int32_t>* out) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  auto add = [&](int32_t id) {
    const int32_t idx = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{id, idx - 1, idx + 1, true});
  };
  // Unknown characters: tokenizers keeps a pending unk (fused across a run when fuse_unk) and
  // only flushes it before the next in-vocabulary character.
  int32_t pending_unk = -1;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t len = utf8::SequenceLength(static_cast<unsigned char>(word[pos]));
    const size_t n = std::min(len, word.size() - pos);
    const std::string_view ch = word.substr(pos, n);
    pos += n;
    if (auto id = Find(ch)) {
      if (pending_unk >= 0) {
        add(pending_unk);
        pending_unk = -1;
      }
      add(*id);
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (unsigned char b : ch) all = all && byte_ids_[b] >= 0;
      if (all) {
        for (unsigned char b : ch) add(byte_ids_[b]);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk >= 0 && !options_.fuse_unk) add(pending_unk);
      pending_unk = *unk_id_;
    }
  }
  if (pending_unk >= 0) add(pending_unk);
  if (symbols.empty()) return;
  symbols.back().next = -1;

  struct Candidate {
    int32_t rank, pos, new_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto consider = [&](int32_t left) {
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    auto it = merges_.find(Key(symbols[left].id, symbols[right].id));
    if (it != merges_.end()) queue.push(Candidate{it->second.rank, left, it->second.new_id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    auto it = merges_.find(Key(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // stale entry
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (const Symbol& s : symbols) {
    if (s.alive) out->push_back(s.id);
  }
}

}  // namespace jisu
