// One chat choice's output when tool calls are parsed: the engine's token ids become the text
// the parser reads, then content and calls (tool_call_parser.h).
//
// The engine's text drops special tokens, and a family's markers may be special tokens
// (Mistral's [TOOL_CALLS], Llama's <|python_tag|>). So this decodes the choice's token ids
// again, as the engine's OutputProcessor does (the same StreamDecoder and StopMatcher, EOS ids
// not decoded), except that the format's marker tokens keep their text.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sampling/sampler.h"
#include "server/tools/tool_call_parser.h"
#include "tokenizer/tokenizer.h"

namespace jisu::server {

class ToolOutputDecoder {
 public:
  // `eos_ids`: the ids that end generation (not decoded unless `ignore_eos`); `stops`: the
  // request's stop strings; `parallel`: false keeps only the first call.
  ToolOutputDecoder(const Tokenizer& tokenizer, ToolCallFormat format,
                    std::span<const int32_t> eos_ids, bool ignore_eos,
                    std::vector<std::string> stops, bool parallel);

  // The ids of one engine output, in order; `finished` on the choice's last output. Appends
  // the content and calls now known.
  void Push(std::span<const int32_t> ids, bool finished, std::vector<ToolParseEvent>* out);

 private:
  bool Decoded(int32_t id) const;

  const Tokenizer& tokenizer_;
  std::vector<int32_t> marker_ids_;  // special tokens whose text the parser reads
  std::vector<int32_t> eos_ids_;     // empty with ignore_eos
  StreamDecoder decoder_;
  StopMatcher stops_;
  ToolCallParser parser_;
  bool parallel_;
  bool stopped_ = false;
  int num_calls_ = 0;
};

}  // namespace jisu::server
