// Splits a model's output, as it streams in, into content and tool calls in the family's
// format (tool_call_format.h). One parser per choice; Push the text in order, then Finish.
//
// Content is every byte outside calls, in order, released as soon as it cannot be the start of
// a call: text that might still become a marker (a prefix of "<tool_call>", a Llama reply that
// opens with '{') is held back until resolved, as StopMatcher holds back stop strings. A call
// is released once complete (its closing marker, or the end of its JSON value) and valid: a
// JSON object with a string "name" and an object of arguments ("arguments", or Llama's
// "parameters"; absent means {}). A block that turns out malformed (bad JSON, no name, never
// closed) is released as content, markers included: nothing is dropped and nothing crashes.
// Whitespace between the content and a call, between calls and after the last call is not
// content. The same text gives the same content and calls however it is split into pushes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/tools/tool_call_format.h"

namespace jisu::server {

struct ToolCall {
  std::string name;
  std::string arguments;  // compact JSON text of an object
  bool operator==(const ToolCall&) const = default;
};

// What became known: content text, or one call.
struct ToolParseEvent {
  std::string content;
  std::optional<ToolCall> call;
};

class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallFormat format);

  void Push(std::string_view text, std::vector<ToolParseEvent>* out);
  // The output ended: releases everything held.
  void Finish(std::vector<ToolParseEvent>* out);

  int num_calls() const { return num_calls_; }

 private:
  enum class State {
    kText,         // outside calls, looking for a marker
    kPlain,        // Llama: the reply is prose, no call can follow
    kHermesCall,   // after <tool_call>, up to </tool_call>
    kJsonCall,     // Llama: a JSON value from '{'
    kMistralHead,  // after [TOOL_CALLS]: '[' array, or name ([CALL_ID] id) [ARGS]
    kMistralArgs,  // after [ARGS]: a JSON object
  };

  // Runs the state machine over buf_ as far as it can; `final`: no more text comes.
  void Advance(bool final, std::vector<ToolParseEvent>* out);
  bool StepText(bool final, std::vector<ToolParseEvent>* out);
  bool StepLlamaText(bool final, std::vector<ToolParseEvent>* out);
  bool StepHermesCall(bool final, std::vector<ToolParseEvent>* out);
  bool StepJsonCall(bool final, std::vector<ToolParseEvent>* out);
  bool StepMistralHead(bool final, std::vector<ToolParseEvent>* out);
  bool StepMistralArgs(bool final, std::vector<ToolParseEvent>* out);

  // Content outside calls, with the whitespace rules above.
  void EmitText(std::string_view text, std::vector<ToolParseEvent>* out);
  // Content as is (a block that did not parse, or text EmitText released).
  void AppendContent(std::string_view text, std::vector<ToolParseEvent>* out);
  void EmitCall(ToolCall call, std::vector<ToolParseEvent>* out);

  ToolCallFormat format_;
  State state_ = State::kText;
  std::string buf_;    // text not yet consumed
  std::string block_;  // the consumed text of the call being read (for AppendContent)
  std::string mistral_name_;
  std::string held_ws_;      // trailing whitespace of the content so far, not yet released
  bool after_call_ = false;  // whitespace right after a call is dropped
  bool at_start_ = true;     // Llama: nothing but whitespace and <|python_tag|> seen so far
  int num_calls_ = 0;
};

// The end of the JSON object or array that starts at s[0] ('{' or '['), or npos while it is
// incomplete. Only brackets and strings are tracked; the value is validated when parsed.
size_t JsonValueEnd(std::string_view s);

// A call from JSON `value` ({"name": ..., "arguments" | "parameters": ...}), or nullopt.
std::optional<ToolCall> ToolCallFromJson(std::string_view value);

}  // namespace jisu::server
