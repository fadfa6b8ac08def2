// Helpers shared by the tokenizer tests: reading fixture files.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace jisu::tokenizer_test {

inline std::string FixtureDir() { return std::string(JISU_TEST_DATA_DIR) + "/tokenizer"; }

inline bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

}  // namespace jisu::tokenizer_test
