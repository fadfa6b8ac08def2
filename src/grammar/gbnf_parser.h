// GBNF (llama.cpp's grammar syntax) -> grammar IR.
//
//   root  ::= item ("," ws item)*      # a comment
//   item  ::= "lit\n\"eral" | [a-z_] [^"\\\x00-\x1F]{0,8} | "(" item ")" | .+?
// Rules are `name ::= alternatives`; names are [A-Za-z0-9_-]+. Terms: "literals" and
// [classes] ([^...] negated, ranges a-z) with escapes \n \r \t \\ \" \] \[ \- \xHH \uHHHH
// \UHHHHHHHH; `.` any character; a rule name; ( groups ); postfix *, +, ?, {m}, {m,}, {m,n}.
// A rule ends at a newline outside parentheses unless the next line continues after `|`.
// Every error names its line and column. The text comes from request bodies: its size, its
// nesting and its repetition bounds are limited, and a rule used but never defined, a rule
// defined twice or a missing `root` are errors.
#pragma once

#include <string_view>

#include "grammar/grammar.h"
#include "jisu/status.h"

namespace jisu::grammar {

inline constexpr size_t kMaxGbnfBytes = 1 << 20;
inline constexpr int kMaxGbnfNesting = 64;

Result<Grammar> ParseGbnf(std::string_view text);

}  // namespace jisu::grammar
