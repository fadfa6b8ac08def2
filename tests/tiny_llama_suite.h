// A gtest fixture whose suite loads the bundled models/tiny-llama once for all its tests (the
// engine and server suites build their engines and servers on it per test).
#pragma once

#include <gtest/gtest.h>

#include "model/model.h"
#include "tests/test_util.h"

namespace jisu::testing {

class TinyLlamaSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load((SourceDir() / "models" / "tiny-llama").string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value().release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  static inline Model* model_ = nullptr;
};

}  // namespace jisu::testing
