// The BPE model: vocabulary, ranked merges and the per-word merge loop of tokenizers' BPE
// (lowest rank first, leftmost on ties; a priority queue over a linked list of symbols, so a
// word of n symbols costs O(n log n)). Handles byte_fallback (<0xNN> tokens), unk_token with
// fuse_unk, and ignore_merges (a word found whole in the vocabulary is one token).
// Words are cached (thread-safe) because real text repeats them.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "jisu/status.h"

namespace jisu {

struct BpeOptions {
  std::optional<std::string> unk_token;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
};

class BpeModel {
 public:
  // `id_to_token` is indexed by id; entries that are empty strings are holes (no token).
  // Every merge must name vocabulary tokens whose concatenation is also in the vocabulary.
  static Result<BpeModel> Create(std::vector<std::string> id_to_token,
                                 const std::vector<std::pair<std::string, std::string>>& merges,
                                 BpeOptions options);

  BpeModel(BpeModel&& other) noexcept;
  BpeModel& operator=(BpeModel&& other) noexcept;

  // Appends the ids of one pre-tokenized word.
  void Tokenize(std::string_view word, std::vector<int32_t>* out) const;

  int32_t size() const { return static_cast<int32_t>(id_to_token_.size()); }
  std::optional<int32_t> Find(std::string_view token) const;
  const std::string& Token(int32_t id) const { return id_to_token_[id]; }

 private:
  BpeModel() = default;
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t Key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void MergeWord(std::string_view word, std::vector<int32_t>* out) const;

  std::vector<std::string> id_to_token_;
  // Transparent hashing: lookups by string_view allocate nothing.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> token_to_id_;
  std::unordered_map<uint64_t, Merge> merges_;
  BpeOptions options_;
  std::optional<int32_t> unk_id_;
  int32_t byte_ids_[256];

  static constexpr size_t kCacheMaxWordBytes = 64;
  static constexpr size_t kCacheMaxEntries = 1 << 16;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> cache_;
};

}  // namespace jisu
