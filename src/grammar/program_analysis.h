// Whole-program checks and sets of a lowered grammar (program.h), each linear in the program's
// size so that a hostile grammar cannot make compilation quadratic: nullable and productive
// rules (counting propagation), left recursion (one DFS), and the FIRST / FOLLOW byte sets
// (worklist propagation; a set only grows, at most 256 times).
#pragma once

#include "grammar/program.h"
#include "jisu/status.h"

namespace jisu::grammar {

// Rejects a root that derives no finite string and left recursion (with the cycle in the
// message); fills the program's FOLLOW sets.
Status AnalyzeProgram(Program* program);

}  // namespace jisu::grammar
