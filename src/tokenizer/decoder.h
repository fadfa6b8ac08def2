// Decoders of tokenizer.json (ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace and
// Sequence, flattened): turn token strings back into text exactly as tokenizers'
// decode_chain does, including its U+FFFD rules (ByteLevel: one per maximal invalid subpart of
// the whole output; ByteFallback: one per byte of an invalid run of byte tokens).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "jisu/status.h"
#include "tokenizer/pipeline_types.h"

namespace jisu {

class Decoder {
 public:
  // Parses the "decoder" value (null means none: tokens are joined with spaces).
  static Result<Decoder> FromJson(const nlohmann::json& j);
  static Decoder ByteLevel();
  // Llama's: Replace("▁", " "), ByteFallback, Fuse, and Strip(" ", 1, 0) if strip_space.
  static Result<Decoder> SentencePiece(bool strip_space);

  bool empty() const { return steps_.empty(); }
  std::string Decode(std::vector<std::string> tokens) const;

  // The raw bytes one token contributes when it is not the first (first == false) or is the
  // first (first == true) token of the output: byte-level and byte-fallback tokens become
  // their bytes without UTF-8 validation, and the first-token rules (Metaspace dropping the
  // replacement, Strip after Fuse) apply. Used for streaming and TokenBytes.
  std::string DecodePiece(const std::string& token, bool first) const;

 private:
  struct Step {
    enum class Kind { kByteLevel, kByteFallback, kFuse, kStrip, kReplace, kMetaspace };
    Kind kind = Kind::kFuse;
    Pattern pattern;             // Replace
    std::string text;            // Replace: content; Strip / Metaspace: the character
    size_t start = 0, stop = 0;  // Strip
    PrependScheme scheme = PrependScheme::kAlways;  // Metaspace
  };
  static Step MakeStep(Step::Kind kind) {
    Step s;
    s.kind = kind;
    return s;
  }
  Status Add(const nlohmann::json& j, int depth);
  std::vector<Step> steps_;
};

}  // namespace jisu
