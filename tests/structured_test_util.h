// What the structured-output engine tests share (engine_structured_test.cc on the CPU,
// engine_device_mask_test.cc through a host stand-in for device sampling,
// backend/cuda/cuda_engine_grammar_test.cc on the GPU): a schema and a regex, requests under them
// on the bundled model's vocabulary, a callback collector, a scripted drafter, and the validity
// check.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace jisu::testing {

inline constexpr const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 10},
    "count": {"type": "integer", "minimum": 0, "maximum": 99},
    "kind": {"enum": ["a", "b"]},
    "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}
  },
  "required": ["name", "count", "kind", "tags"],
  "additionalProperties": false
})";

struct Result {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int32_t> tokens;
  std::string text;
  FinishReason reason = FinishReason::kNone;
  Status error;
  bool done = false;
  OutputCallback Callback() {
    return [this](const EngineOutput& o) {
      std::lock_guard<std::mutex> lock(mu);
      tokens.insert(tokens.end(), o.token_ids.begin(), o.token_ids.end());
      text += o.text;
      if (o.finished) {
        done = true;
        reason = o.finish_reason;
        error = o.error;
        cv.notify_all();
      }
    };
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(300), [&] { return done; });
  }
};

// Proposes, for each known prompt, its next tokens from a script with random corruptions.
class ScriptedDrafter : public Drafter {
 public:
  ScriptedDrafter(uint32_t seed, double p_wrong, int32_t vocab)
      : rng_(seed), p_wrong_(p_wrong), vocab_(vocab) {}
  void Expect(std::vector<int32_t> prompt, std::vector<int32_t> continuation) {
    script_.push_back({std::move(prompt), std::move(continuation)});
  }
  void Propose(int64_t, std::span<const int32_t> tokens, int64_t max_tokens,
               std::vector<int32_t>* drafts) override {
    drafts->clear();
    for (const auto& [prompt, cont] : script_) {
      if (tokens.size() < prompt.size() ||
          !std::equal(prompt.begin(), prompt.end(), tokens.begin())) {
        continue;
      }
      const size_t done = tokens.size() - prompt.size();
      for (int64_t i = 0; i < max_tokens; ++i) {
        const size_t at = done + static_cast<size_t>(i);
        int32_t t = at < cont.size() ? cont[at] : 0;
        if (std::bernoulli_distribution(p_wrong_)(rng_)) {
          t = std::uniform_int_distribution<int32_t>(0, vocab_ - 1)(rng_);
        }
        drafts->push_back(t);
      }
      return;
    }
  }

 private:
  std::mt19937 rng_;
  double p_wrong_;
  int32_t vocab_;
  std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> script_;
};

// Four greedy requests on `tok`'s vocabulary: three under kSchema, the last under a regex.
inline std::vector<EngineRequest> Requests(const Tokenizer& tok) {
  std::vector<EngineRequest> rs;
  const char* prompts[] = {"config = ", "def f():\n    return ", "x = {", "data = "};
  for (int i = 0; i < 4; ++i) {
    EngineRequest r;
    r.prompt = tok.Encode(prompts[i], false);
    r.sampling.temperature = 0;
    r.sampling.max_tokens = 200;
    r.sampling.structured.kind = StructuredOutput::Kind::kJsonSchema;
    r.sampling.structured.text = kSchema;
    rs.push_back(r);
  }
  rs[3].sampling.structured.kind = StructuredOutput::Kind::kRegex;
  rs[3].sampling.structured.text = "(0|[1-9][0-9]{0,3})( [+*] (0|[1-9][0-9]{0,3})){2}";
  return rs;
}

// Submits every request and waits for all of them.
inline std::vector<std::unique_ptr<Result>> RunAll(Engine& e,
                                                   const std::vector<EngineRequest>& rs) {
  std::vector<std::unique_ptr<Result>> out;
  for (const EngineRequest& r : rs) {
    out.push_back(std::make_unique<Result>());
    auto id = e.Submit(r, out.back()->Callback());
    EXPECT_TRUE(id.ok()) << id.status().ToString();
  }
  for (auto& r : out) EXPECT_TRUE(r->Wait());
  return out;
}

// r finished with a stop and its text matches kSchema's shape (or the regex).
inline void ExpectValid(const Result& r, bool regex) {
  EXPECT_EQ(r.reason, FinishReason::kStop) << r.text << " " << r.error.message();
  if (regex) {
    EXPECT_TRUE(
        std::regex_match(r.text, std::regex("(0|[1-9][0-9]{0,3})( [+*] (0|[1-9][0-9]{0,3})){2}")))
        << r.text;
    return;
  }
  const nlohmann::json j = nlohmann::json::parse(r.text, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << r.text;
  EXPECT_EQ(j.size(), 4u) << r.text;
  ASSERT_TRUE(j.contains("name") && j["name"].is_string()) << r.text;
  EXPECT_LE(j["name"].get<std::string>().size(), 10u * 4) << r.text;  // <= 10 characters
  ASSERT_TRUE(j.contains("count") && j["count"].is_number_integer()) << r.text;
  EXPECT_GE(j["count"].get<int>(), 0);
  EXPECT_LE(j["count"].get<int>(), 99);
  ASSERT_TRUE(j.contains("kind")) << r.text;
  EXPECT_TRUE(j["kind"] == "a" || j["kind"] == "b") << r.text;
  ASSERT_TRUE(j.contains("tags") && j["tags"].is_array()) << r.text;
  EXPECT_LE(j["tags"].size(), 2u);
  for (const auto& t : j["tags"]) EXPECT_TRUE(t.is_boolean());
}

}  // namespace jisu::testing
