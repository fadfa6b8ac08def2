// Expression and statement semantics against jinja2: every snippet in
// tests/data/chat/expected/snippets.json (rendered by tools/make_chat_fixtures.py with the
// transformers environment) must render identically, or fail where jinja2 failed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "chat/jinja_template.h"
#include "tests/test_paths.h"

namespace jisu::jinja {
namespace {

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(JinjaSnippetsTest, MatchJinja2) {
  auto path = jisu::testing::TestDataDir() / "chat" / "expected" / "snippets.json";
  auto fixture = nlohmann::ordered_json::parse(ReadFile(path));
  int n = 0, same_message = 0, errors = 0;
  for (const auto& c : fixture["cases"]) {
    ++n;
    std::string src = c["template"].get<std::string>();
    std::vector<std::pair<std::string, Value>> vars;
    for (auto it = c["vars"].begin(); it != c["vars"].end(); ++it) {
      auto v = FromJson(it.value());
      ASSERT_TRUE(v.ok());
      vars.emplace_back(it.key(), *v);
    }
    auto t = Template::Parse(src);
    Result<std::string> out = t.ok() ? (*t)->Render(vars) : Result<std::string>(t.status());
    if (c.contains("error")) {
      ++errors;
      EXPECT_FALSE(out.ok()) << src << "\n  rendered: " << (out.ok() ? *out : "")
                             << "\n  jinja2 raised: " << c["error"].get<std::string>();
      if (!out.ok() &&
          out.status().message().find(c["error"].get<std::string>()) != std::string::npos) {
        ++same_message;
      }
      continue;
    }
    if (!out.ok()) {
      ADD_FAILURE() << src << "\n  error: " << out.status().ToString();
      continue;
    }
    EXPECT_EQ(*out, c["output"].get<std::string>()) << src;
  }
  EXPECT_GE(n, 140);
  // Most runtime errors carry jinja2's own message.
  EXPECT_GE(same_message, errors / 2) << same_message << " of " << errors;
}

}  // namespace
}  // namespace jisu::jinja
