// The tokenizer of a Hugging Face folder whose tokenizer is SentencePiece's (Llama 2, Mistral
// v0.1, and others that ship tokenizer.model), written as a GGUF "llama" vocabulary the way
// llama.cpp's convert_hf_to_gguf.py writes it (_create_vocab_sentencepiece + SpecialVocab):
// every piece with its score and type, the embedding's extra rows as unused "[PADi]" pieces,
// added tokens from added_tokens.json and tokenizer_config.json's added_tokens_decoder
// (special or <...>-looking -> control, others user-defined, score -1000). Readers then
// tokenize as SentencePiece does (merges ranked by the scores).
#pragma once

#include <string>

#include "jisu/status.h"

namespace jisu {

class GgufWriter;
class Model;

// Whether `dir` holds a tokenizer.model that the SentencePiece path should convert: its
// tokenizer.json (if any) is not a byte-level BPE one.
bool PrefersSentencePieceVocab(const std::string& dir);

Status AddSentencePieceVocab(const std::string& dir, const Model& model, GgufWriter& w);

}  // namespace jisu
