// SentencePiece's model file (tokenizer.model: a serialized sentencepiece.ModelProto), read
// without protobuf: the pieces with their scores and types, and the trainer and normalizer
// settings a converter needs. Field numbers follow sentencepiece_model.proto; fields jisu does
// not use are skipped by wire type. The bytes come from outside: every length and count is
// bounded by the input, and a malformed file gives Status::Corrupt naming what broke.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "jisu/status.h"

namespace jisu {

struct SpmModel {
  // sentencepiece.ModelProto.SentencePiece.Type (GGUF's token_type uses the same numbers).
  enum PieceType : int32_t {
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6,
  };
  // sentencepiece.TrainerSpec.ModelType
  enum ModelType : int32_t { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };

  struct Piece {
    std::string text;
    float score = 0;
    int32_t type = kNormal;
  };
  std::vector<Piece> pieces;

  // TrainerSpec (defaults as in the .proto)
  int32_t model_type = kUnigram;
  bool byte_fallback = false;
  int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
  // NormalizerSpec
  std::string normalizer_name;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// Parses a tokenizer.model. Pieces must be valid UTF-8 and of a known type.
Result<SpmModel> ParseSpmModel(std::string_view bytes);

}  // namespace jisu
