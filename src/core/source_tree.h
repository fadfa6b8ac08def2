// Where the source tree this binary was built from lies, for runs from a build tree: the
// bundled models, the ./.venv that scripts/setup.sh fills, bench/workload.
#pragma once

namespace jisu {

// Defined in one source that CMake generates (cmake/source_tree.cc.in), not passed to every
// object as a compile definition: an object that does not name the tree's path compiles the
// same in any clone, so a compiler cache hits across clones.
const char* SourceTree();

}  // namespace jisu
