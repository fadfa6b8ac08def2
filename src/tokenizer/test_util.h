// Helpers shared by the tokenizer tests: reading fixture files.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "tests/test_paths.h"

namespace jisu::tokenizer_test {

inline std::string FixtureDir() { return jisu::testing::TestDataPath("tokenizer"); }

inline bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

}  // namespace jisu::tokenizer_test
