// Paths the tests read: the source tree (fixtures, bundled models, the ./.venv that
// scripts/setup.sh fills) and the command that runs the build's jisu binary.
#pragma once

#include <filesystem>
#include <string>

#include "core/source_tree.h"

namespace jisu::testing {

// The jisu binary of this build, behind the emulator a cross build's tests run under. Defined in
// one generated source (cmake/test_paths.cc.in), so that no other test object names a path of
// the clone and a compiler cache hits across clones.
const char* JisuCommand();

inline std::filesystem::path SourceDir() { return jisu::SourceTree(); }
inline std::filesystem::path TestDataDir() { return SourceDir() / "tests" / "data"; }
inline std::string TestDataPath(const std::string& relative) {
  return (TestDataDir() / relative).string();
}

}  // namespace jisu::testing
