#include "loadgen/workload.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "loadgen/random.h"
#include "loadgen/request_body.h"
#include "tests/test_paths.h"

namespace jisu::loadgen {
namespace {

Corpus SmallCorpus() {
  Corpus c;
  for (int i = 0; i < 20; ++i) {
    std::string p;
    for (int w = 0; w < 100; ++w) p += "p" + std::to_string(i) + "w" + std::to_string(w) + " ";
    c.passages.push_back(p);
  }
  for (int i = 0; i < 10; ++i) c.code.push_back("int f" + std::to_string(i) + "() { return 1; }");
  for (int i = 0; i < 30; ++i) c.questions.push_back("Question " + std::to_string(i) + "?");
  c.system_prompt = "You are a careful assistant. Shared system prompt.";
  return c;
}

TEST(LoadgenWorkload, MixSharedPrefixAndUsers) {
  WorkloadOptions o;
  o.num_requests = 20000;
  o.seed = 3;
  o.mix = {0.5, 0.3, 0.2};
  o.shared_prefix_share = 0.4;
  o.num_users = 100;
  o.zipf_s = 1.2;
  auto specs = GenerateWorkload(SmallCorpus(), o);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->size(), o.num_requests);
  std::array<int, kNumClasses> by_class{};
  int shared = 0;
  std::map<std::string, int> users;
  for (const RequestSpec& r : *specs) {
    ++by_class[static_cast<size_t>(r.cls)];
    ASSERT_FALSE(r.messages.empty());
    const bool starts_with_system =
        r.messages[0].role == "system" && r.messages[0].content == SmallCorpus().system_prompt;
    EXPECT_EQ(starts_with_system, r.shared_prefix);
    shared += r.shared_prefix;
    ++users[r.user];
    EXPECT_EQ(r.max_tokens, o.max_tokens[static_cast<size_t>(r.cls)]);
    EXPECT_EQ(r.messages.back().role, "user");
  }
  const double n = static_cast<double>(o.num_requests);
  // Binomial standard errors are <= 0.0035 here; 0.015 is > 4 of them.
  EXPECT_NEAR(by_class[0] / n, 0.5, 0.015);
  EXPECT_NEAR(by_class[1] / n, 0.3, 0.015);
  EXPECT_NEAR(by_class[2] / n, 0.2, 0.015);
  EXPECT_NEAR(shared / n, 0.4, 0.015);
  ZipfSampler z(o.num_users, o.zipf_s);
  EXPECT_NEAR(users["user-0"] / n, z.Probability(0), 0.015);
  EXPECT_NEAR(users["user-1"] / n, z.Probability(1), 0.015);
  // Skewed: the 10 heaviest of 100 users send over half of the requests.
  int top10 = 0;
  for (int k = 0; k < 10; ++k) top10 += users["user-" + std::to_string(k)];
  EXPECT_GT(top10 / n, 0.5);
}

TEST(LoadgenWorkload, SeedReproducible) {
  WorkloadOptions o;
  o.num_requests = 300;
  o.seed = 11;
  auto a = GenerateWorkload(SmallCorpus(), o);
  auto b = GenerateWorkload(SmallCorpus(), o);
  o.seed = 12;
  auto c = GenerateWorkload(SmallCorpus(), o);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  BodyOptions body;
  body.model = "m";
  std::string sa, sb, sc;
  for (size_t i = 0; i < a->size(); ++i) {
    sa += BuildRequestBody((*a)[i], body);
    sb += BuildRequestBody((*b)[i], body);
    sc += BuildRequestBody((*c)[i], body);
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
}

TEST(LoadgenWorkload, ClassShapesAndConversations) {
  WorkloadOptions o;
  o.num_requests = 2000;
  o.summarize_words = 80;
  o.max_chat_history = 2;
  auto specs = GenerateWorkload(SmallCorpus(), o);
  ASSERT_TRUE(specs.ok());
  std::map<std::string, std::string> last_question;  // user -> question of their previous chat
  int continued = 0;
  for (const RequestSpec& r : *specs) {
    const std::string& text = r.messages.back().content;
    if (r.cls == RequestClass::kSummarize) {
      // Task line + 80 words of document.
      const size_t body = text.find("\n\n");
      ASSERT_NE(body, std::string::npos);
      int words = 0;
      bool in_word = false;
      for (size_t i = body; i < text.size(); ++i) {
        const bool space = text[i] == ' ' || text[i] == '\n';
        if (!space && !in_word) ++words;
        in_word = !space;
      }
      EXPECT_EQ(words, 80);
    }
    if (r.cls == RequestClass::kCode) {
      EXPECT_NE(text.find("int f"), std::string::npos);
    }
    if (r.cls == RequestClass::kChat) {
      const size_t history = r.messages.size() - (r.shared_prefix ? 1 : 0) - 1;
      EXPECT_EQ(history % 2, 0u);
      EXPECT_LE(history / 2, 2u);
      if (history > 0) {
        // The previous turn of this user's conversation is replayed verbatim.
        ++continued;
        EXPECT_EQ(r.messages[r.messages.size() - 3].content, last_question[r.user]);
      }
      last_question[r.user] = text;
    }
  }
  EXPECT_GT(continued, 100);
}

TEST(LoadgenWorkload, RejectsBadOptions) {
  WorkloadOptions o;
  o.mix = {0, 0, 0};
  EXPECT_FALSE(GenerateWorkload(SmallCorpus(), o).ok());
  o = {};
  o.shared_prefix_share = 1.5;
  EXPECT_FALSE(GenerateWorkload(SmallCorpus(), o).ok());
  o = {};
  o.mix = {0, 1, 0};
  auto only_summaries = GenerateWorkload(SmallCorpus(), o);
  ASSERT_TRUE(only_summaries.ok());
  for (const auto& r : *only_summaries) EXPECT_EQ(r.cls, RequestClass::kSummarize);
  EXPECT_FALSE(GenerateWorkload(Corpus{}, WorkloadOptions{}).ok());
}

TEST(LoadgenWorkload, ShippedCorpusLoads) {
  auto c = LoadCorpus((jisu::testing::SourceDir() / "bench" / "workload").string());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GT(c->passages.size(), 10u);
  EXPECT_GT(c->code.size(), 10u);
  EXPECT_GT(c->questions.size(), 30u);
}

TEST(LoadgenWorkload, FixedWorkloadHasExactLengthsAndDistinctPrompts) {
  FixedWorkloadOptions o;
  o.num_requests = 64;
  o.prompt_tokens = 128;
  o.max_tokens = 64;
  o.token_id_limit = 500;
  ASSERT_TRUE(o.Validate().ok());
  const std::vector<RequestSpec> specs = GenerateFixedWorkload(o);
  ASSERT_EQ(specs.size(), 64u);
  std::set<int32_t> first_tokens;
  for (const RequestSpec& s : specs) {
    ASSERT_EQ(s.prompt_tokens.size(), 128u);
    EXPECT_EQ(s.max_tokens, 64);
    for (int32_t t : s.prompt_tokens) {
      EXPECT_GE(t, 3);
      EXPECT_LT(t, 500);
    }
    first_tokens.insert(s.prompt_tokens[0]);
  }
  // No shared prefix to speak of: first tokens spread over the range.
  EXPECT_GT(first_tokens.size(), 40u);
  // Same seed, same set; another seed, another set.
  EXPECT_EQ(GenerateFixedWorkload(o)[5].prompt_tokens, specs[5].prompt_tokens);
  o.seed = 9;
  EXPECT_NE(GenerateFixedWorkload(o)[5].prompt_tokens, specs[5].prompt_tokens);

  BodyOptions b;
  b.model = "m";
  b.endpoint = Endpoint::kCompletions;
  b.ignore_eos = true;
  const auto j = nlohmann::json::parse(BuildRequestBody(specs[0], b));
  ASSERT_TRUE(j["prompt"].is_array());
  EXPECT_EQ(j["prompt"].size(), 128u);
  EXPECT_EQ(j["prompt"][0], specs[0].prompt_tokens[0]);
  EXPECT_EQ(j["max_tokens"], 64);
  EXPECT_EQ(j["ignore_eos"], true);

  FixedWorkloadOptions bad;
  bad.prompt_tokens = 0;
  EXPECT_FALSE(bad.Validate().ok());
  bad = {};
  bad.token_id_limit = 2;
  EXPECT_FALSE(bad.Validate().ok());
}

}  // namespace
}  // namespace jisu::loadgen
