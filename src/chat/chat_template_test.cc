// Renders the real chat templates in tests/data/chat/templates (and those fetched from PyPI,
// tests/data/chat/external) with the message sets the fixtures were generated from
// (tools/make_chat_fixtures.py, transformers + jinja2) and requires byte-identical output, or
// an error where transformers raised one.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace jisu {
namespace {

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string FirstDifference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  size_t from = i > 40 ? i - 40 : 0;
  return "first difference at byte " + std::to_string(i) + "\n  want: ..." +
         nlohmann::json(want.substr(from, 120)).dump() + "\n  got:  ..." +
         nlohmann::json(got.substr(from, 120)).dump();
}

const std::filesystem::path kChatData = jisu::testing::TestDataDir() / "chat";

struct FixtureCounts {
  int cases = 0, errors = 0;
};

// A fixture's fixed clock, "YYYY-MM-DDTHH:MM:SS" (a naive local time, as Python's datetime).
std::tm ParseNow(const std::string& s) {
  std::tm tm{};
  EXPECT_EQ(std::sscanf(s.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                        &tm.tm_hour, &tm.tm_min, &tm.tm_sec),
            6)
      << s;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  std::time_t t = timegm(&tm);  // fills in the weekday and day of the year
  std::tm out{};
  gmtime_r(&t, &out);
  return out;
}

// Renders every case of one fixture file with `source` and compares with what transformers
// rendered or raised.
void CheckFixture(const nlohmann::ordered_json& fixture, const std::string& source,
                  FixtureCounts* counts) {
  const std::string name = fixture["template"].get<std::string>();
  auto tmpl = ChatTemplate::Parse(source);
  if (!tmpl.ok()) {
    // Only a template jinja2 cannot compile either may fail to parse.
    for (const auto& c : fixture["cases"]) {
      EXPECT_TRUE(c.contains("error")) << name << ": " << tmpl.status().ToString();
    }
    return;
  }
  for (const auto& c : fixture["cases"]) {
    ++counts->cases;
    ChatTemplateInputs in;
    in.messages = c["messages"];
    in.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    in.bos_token = c["bos_token"].get<std::string>();
    in.eos_token = c["eos_token"].get<std::string>();
    in.extra = c["extra"];
    if (c.contains("now")) in.now = ParseNow(c["now"].get<std::string>());
    std::string label = name + " with " + c["messages_file"].get<std::string>() +
                        (in.add_generation_prompt ? " (generation prompt)" : "");
    auto out = (*tmpl)->Render(in);
    if (c.contains("error")) {
      ++counts->errors;
      EXPECT_FALSE(out.ok()) << label << " rendered but transformers raised: "
                             << c["error"].get<std::string>();
      if (!out.ok() && c["error_type"] == "TemplateError") {
        // raise_exception: the template's own message must come through.
        std::string want = c["error"].get<std::string>();
        const std::string& got = out.status().message();
        EXPECT_TRUE(got.size() >= want.size() &&
                    got.compare(got.size() - want.size(), want.size(), want) == 0)
            << label << ": " << got;
      }
      continue;
    }
    ASSERT_TRUE(out.ok()) << label << ": " << out.status().ToString();
    std::string want = c["output"].get<std::string>();
    EXPECT_EQ(*out, want) << label << "\n" << FirstDifference(want, *out);
  }
}

TEST(ChatTemplateTest, RealTemplatesMatchTransformers) {
  int templates = 0;
  FixtureCounts counts;
  for (const auto& entry : std::filesystem::directory_iterator(kChatData / "expected")) {
    if (entry.path().filename() == "snippets.json") continue;
    auto fixture = nlohmann::ordered_json::parse(ReadFile(entry.path()));
    std::string name = fixture["template"].get<std::string>();
    std::string source = ReadFile(kChatData / "templates" / name);
    ASSERT_FALSE(source.empty()) << name;
    ++templates;
    CheckFixture(fixture, source, &counts);
  }
  EXPECT_GE(templates, 18);
  EXPECT_GE(counts.cases, 400);
  EXPECT_GT(counts.errors, 0);
}

// Templates that are not in the repository (Gemma 3's): scripts/setup.sh fetches the upstream
// text from PyPI, the fixtures hold what transformers rendered with it.
TEST(ChatTemplateTest, FetchedTemplatesMatchTransformers) {
  FixtureCounts counts;
  std::vector<std::string> missing;
  for (const auto& entry : std::filesystem::directory_iterator(kChatData / "external")) {
    auto fixture = nlohmann::ordered_json::parse(ReadFile(entry.path()));
    const std::string name = fixture["template"].get<std::string>();
    const auto path = testing::FindExternalChatTemplate(name);
    if (!path) {
      missing.push_back(name);
      continue;
    }
    CheckFixture(fixture, ReadFile(*path), &counts);
  }
  if (!missing.empty()) {
    const std::string what = "not fetched: " + nlohmann::json(missing).dump() +
                             " (run tools/fetch_chat_templates.py, see scripts/setup.sh)";
    if (testing::SetupDataRequired()) FAIL() << what;
    GTEST_SKIP() << what;
  }
  EXPECT_GE(counts.cases, 26);
  EXPECT_GT(counts.errors, 0);
}

// llama.cpp's models/templates (the real chat templates of Llama 3.x, Qwen2.5/3, Hermes 2/3,
// Mistral, DeepSeek, Command R, Gemma, gpt-oss, ...): scripts/setup.sh extracts them from the
// llama-cpp-python sdist and renders them with jinja2 in transformers' environment
// (tools/render_chat_references.py). Every one must render identically.
TEST(ChatTemplateTest, UpstreamTemplatesMatchJinja2) {
  const std::filesystem::path templates = testing::ChatTemplateDir() / "upstream";
  const std::filesystem::path expected = testing::ChatTemplateDir() / "upstream-expected";
  std::error_code ec;
  if (!std::filesystem::is_directory(expected, ec)) {
    const std::string what = expected.string() +
                             " is missing (run tools/fetch_vocab_tests.py and "
                             "tools/render_chat_references.py, see scripts/setup.sh)";
    if (testing::SetupDataRequired()) FAIL() << what;
    GTEST_SKIP() << what;
  }
  int num_templates = 0, num_fixtures = 0;
  for (const auto& e : std::filesystem::directory_iterator(templates)) {
    num_templates += e.path().extension() == ".jinja";
  }
  FixtureCounts counts;
  for (const auto& entry : std::filesystem::directory_iterator(expected)) {
    if (entry.path().extension() != ".json") continue;
    auto fixture = nlohmann::ordered_json::parse(ReadFile(entry.path()));
    const std::string name = fixture["template"].get<std::string>();
    const std::string source = ReadFile(templates / name);
    ASSERT_FALSE(source.empty()) << name;
    ++num_fixtures;
    CheckFixture(fixture, source, &counts);
  }
  EXPECT_EQ(num_fixtures, num_templates) << "a template has no rendering in " << expected;
  EXPECT_GE(num_templates, 60);
  EXPECT_GE(counts.cases, 60 * 26);
  EXPECT_GT(counts.errors, 0);
}

TEST(ChatTemplateTest, FixedClock) {
  auto t = ChatTemplate::Parse("{{ strftime_now('%Y-%m-%d %a %j %B') }}");
  ASSERT_TRUE(t.ok());
  ChatTemplateInputs in;
  in.now = ParseNow("2024-02-29T23:59:58");
  auto out = (*t)->Render(in);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "2024-02-29 Thu 060 February");
}

TEST(ChatTemplateTest, SyntaxErrorNamesLineAndColumn) {
  auto t = ChatTemplate::Parse("line one\n{% if x %}\n  {{ 1 + }}\n{% endif %}");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("line 3, column 10"), std::string::npos)
      << t.status().message();
}

TEST(ChatTemplateTest, RuntimeErrorNamesLine) {
  auto t = ChatTemplate::Parse("a\n{{ raise_exception('bad role') }}");
  ASSERT_TRUE(t.ok());
  auto out = (*t)->Render({});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("line 2"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("bad role"), std::string::npos);
}

TEST(ChatTemplateTest, DropsNullKeysAndAliasesReasoning) {
  auto t =
      ChatTemplate::Parse("{% for m in messages %}{{ m }}|{{ m.content is defined }}{% endfor %}");
  ASSERT_TRUE(t.ok());
  ChatTemplateInputs in;
  in.messages = nlohmann::ordered_json::parse(
      R"([{"role": "assistant", "content": null, "reasoning": "why"}])");
  auto out = (*t)->Render(in);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out,
            "{'thinking': 'why', 'role': 'assistant', 'reasoning': 'why', "
            "'reasoning_content': 'why'}|False");
}

TEST(ChatTemplateTest, ToolsAndDocumentsDefaultToNone) {
  auto t = ChatTemplate::Parse("{{ tools is none }} {{ documents is none }} {{ extra_var }}");
  ASSERT_TRUE(t.ok());
  ChatTemplateInputs in;
  in.extra = {{"extra_var", 5}};
  auto out = (*t)->Render(in);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "True True 5");
}

TEST(ChatTemplateTest, StrftimeNowUsesLocalTime) {
  auto t = ChatTemplate::Parse("{{ strftime_now('%Y') }}|{{ strftime_now('%d %b %Y') }}");
  ASSERT_TRUE(t.ok());
  auto out = (*t)->Render({});
  ASSERT_TRUE(out.ok());
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y|%d %b %Y", &tm);
  EXPECT_EQ(*out, buf);
}

TEST(ChatTemplateTest, RejectsMalformedInputs) {
  auto t = ChatTemplate::Parse("{{ messages }}");
  ASSERT_TRUE(t.ok());
  ChatTemplateInputs in;
  in.messages = nlohmann::ordered_json::object();
  EXPECT_FALSE((*t)->Render(in).ok());
  in.messages = nlohmann::ordered_json::array({1});
  EXPECT_FALSE((*t)->Render(in).ok());
  // A plain nlohmann::json converts (with sorted keys).
  nlohmann::json plain = nlohmann::json::array({{{"role", "user"}, {"content", "x"}}});
  in.messages = plain;
  auto out = (*t)->Render(in);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "[{'content': 'x', 'role': 'user'}]");
}

TEST(ChatTemplateTest, RunawayTemplatesAreStopped) {
  // Exponential string growth, deep recursion and huge loops end in errors, not crashes.
  const char* bad[] = {
      "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}{{ ns.s|length }}",
      "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
      "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
      "{{ 'x' * 10000000000 }}",
      "{{ [1] * 10000000000 }}",
      "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}"
      "{% endfor %}",
  };
  for (const char* src : bad) {
    auto t = ChatTemplate::Parse(src);
    ASSERT_TRUE(t.ok()) << src;
    auto out = (*t)->Render({});
    EXPECT_FALSE(out.ok()) << src;
  }
  std::string deep(5000, '(');
  EXPECT_FALSE(ChatTemplate::Parse("{{ " + deep + "1" + std::string(5000, ')') + " }}").ok());
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  EXPECT_FALSE(ChatTemplate::Parse(chain + " }}").ok());
  std::string nested;
  for (int i = 0; i < 1000; ++i) nested += "{% if true %}";
  EXPECT_FALSE(ChatTemplate::Parse(nested).ok());
}

}  // namespace
}  // namespace jisu
