// Tokenizer for the Jinja2 template language as configured by transformers
// (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False, default delimiters).
// Whitespace control (`-` / `+` on tags), comments and {% raw %} are resolved here, so the
// parser only sees data, tag delimiters and expression tokens. Token positions are byte
// offsets into the normalized source (see NormalizeSource) for line:column error messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "jisu/status.h"

namespace jisu::jinja {

enum class TokKind : uint8_t {
  kData,
  kVarBegin,
  kVarEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInt,
  kFloat,
  kOp,
  kEof,
};

struct Token {
  TokKind kind;
  size_t pos;        // byte offset in the normalized source
  std::string text;  // data text, name, operator, or the decoded string literal
  int64_t ival = 0;
  double fval = 0;
};

// jinja2 turns \r\n and \r into \n and drops one trailing newline before lexing.
std::string NormalizeSource(std::string_view source);

// Tokenizes a normalized source. The last token is always kEof.
Result<std::vector<Token>> Tokenize(const std::string& source);

// "template syntax error at line L, column C: msg", with L and C 1-based (C counts bytes).
Status SyntaxErrorAt(const std::string& source, size_t pos, const std::string& msg);

}  // namespace jisu::jinja
