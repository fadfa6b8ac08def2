// Pre-tokenizers of tokenizer.json: ByteLevel (add_prefix_space, use_regex with the GPT-2
// pattern), Split (String/Regex pattern, behavior, invert), Metaspace (replacement,
// prepend_scheme, split), Digits, Punctuation, Whitespace, WhitespaceSplit and Sequence
// (flattened). They cut
// the normalized text between added tokens into the words the BPE model sees. After a ByteLevel
// step, words are spelled in GPT-2's byte alphabet.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "jisu/status.h"
#include "tokenizer/pipeline_types.h"

namespace jisu {

inline constexpr std::string_view kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
inline constexpr std::string_view kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
inline constexpr std::string_view kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class PreTokenizer {
 public:
  // Parses the "pre_tokenizer" value (null means none). Unknown types: Unsupported.
  static Result<PreTokenizer> FromJson(const nlohmann::json& j);
  // Builders for the pipelines transformers' tokenizer classes impose.
  static Result<PreTokenizer> ByteLevel(bool add_prefix_space, bool use_regex);
  static Result<PreTokenizer> SplitThenByteLevel(std::string_view regex, bool add_prefix_space);
  static Result<PreTokenizer> Metaspace(std::string replacement, PrependScheme scheme, bool split);

  bool empty() const { return steps_.empty(); }
  void Apply(std::vector<Piece>* pieces) const;

 private:
  struct Step {
    enum class Kind { kByteLevel, kSplit, kMetaspace };
    Kind kind = Kind::kSplit;
    bool add_prefix_space = false;  // ByteLevel
    Pattern pattern;                // ByteLevel (if use_regex), Split, Metaspace (if split)
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
    std::string replacement;  // Metaspace
    PrependScheme scheme = PrependScheme::kAlways;
  };
  Status Add(const nlohmann::json& j, int depth);
  static Result<Step> ByteLevelStep(bool add_prefix_space, bool use_regex);
  std::vector<Step> steps_;
};

// Splits `piece` at the matches of `pattern` the way tokenizers' NormalizedString::split does.
void SplitPiece(const Piece& piece, const Regex& pattern, SplitBehavior behavior, bool invert,
                std::vector<Piece>* out);

}  // namespace jisu
