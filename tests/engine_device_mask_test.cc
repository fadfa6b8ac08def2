// Structured output drawn "on the device": the engine over a host stand-in for a sampling device
// (tests/fake_device_sampling.h: the CPU model's logits, then what the CUDA backend does to a
// device row) must produce exactly what the host path produces for greedy requests — constrained,
// free and logit_bias rows in one continuous batch, with and without speculative decoding (whose
// verification rows then get one mask per draft position) — and valid output for sampled ones.
// The masks of a verification come from walking the matcher through the drafts and back.
// The same engine test on the GPU is backend/cuda/cuda_engine_grammar_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/engine.h"
#include "engine/output_processor.h"
#include "grammar/grammar_compiler.h"
#include "tests/fake_device_sampling.h"
#include "tests/structured_test_util.h"
#include "tests/test_util.h"
#include "tests/tiny_llama_suite.h"

namespace jisu {
namespace {

using testing::ExpectValid;
using testing::FakeDeviceSamplingBackend;
using testing::Result;
using testing::RunAll;
using testing::ScriptedDrafter;

class EngineDeviceMaskTest : public testing::TinyLlamaSuite {
 protected:
  static EngineOptions Options() {
    EngineOptions o;
    o.kv_blocks = 128;
    o.prefix_cache = PrefixCacheMode::kOff;
    o.scheduler.block_size = 16;
    o.scheduler.max_model_len = 512;
    o.scheduler.max_batch_tokens = 256;
    o.num_threads = 2;
    return o;
  }

  // An engine whose backend draws on its "device"; `seen` is that backend.
  static std::unique_ptr<Engine> DeviceEngine(const EngineOptions& o,
                                              FakeDeviceSamplingBackend** seen) {
    auto cpu = CpuBackend::Create(
        *model_, CpuBackendOptions{o.kv_blocks, o.scheduler.block_size, o.num_threads});
    EXPECT_TRUE(cpu.ok()) << cpu.status().ToString();
    auto fake = std::make_unique<FakeDeviceSamplingBackend>(std::move(cpu).value());
    *seen = fake.get();
    auto e = Engine::Create(*model_, o, std::move(fake));
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(e).value() : nullptr;
  }

  // Constrained requests (3 schema, 1 regex), two free ones and a free one with logit_bias.
  static std::vector<EngineRequest> MixedRequests() {
    std::vector<EngineRequest> rs = testing::Requests(model_->tokenizer());
    for (int i = 0; i < 3; ++i) {
      EngineRequest r = rs[static_cast<size_t>(i)];
      r.sampling.structured = {};
      r.sampling.max_tokens = 24;
      r.sampling.ignore_eos = true;
      if (i == 2) {
        const Tokenizer& tok = model_->tokenizer();
        r.sampling.logit_bias = {{tok.TokenToId("one").value(), 6.0f},
                                 {tok.TokenToId("maybe").value(), 4.5f},
                                 {tok.TokenToId("one").value(), -1.25f}};
      }
      rs.push_back(r);
    }
    // A constrained request with logit_bias: the bias applies before the mask.
    EngineRequest biased = rs[0];
    biased.sampling.logit_bias = {{model_->tokenizer().Encode("true", false)[0], 8.0f}};
    rs.push_back(biased);
    return rs;
  }
};

double MetricValue(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const std::string all = "\n" + text;
  const size_t at = all.find(key);
  return at == std::string::npos ? -1 : std::strtod(all.c_str() + at + key.size(), nullptr);
}

void ExpectSame(const std::vector<std::unique_ptr<Result>>& got,
                const std::vector<std::unique_ptr<Result>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i]->tokens, want[i]->tokens) << "request " << i;
    EXPECT_EQ(got[i]->text, want[i]->text) << "request " << i;
    EXPECT_EQ(got[i]->reason, want[i]->reason) << "request " << i;
  }
}

TEST_F(EngineDeviceMaskTest, GreedyDeviceRowsEqualHostRows) {
  const std::vector<EngineRequest> requests = MixedRequests();
  auto host = Engine::Create(*model_, Options());
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  const auto expected = RunAll(**host, requests);
  for (size_t i = 0; i < 4; ++i) ExpectValid(*expected[i], i == 3);
  ExpectValid(*expected.back(), false);

  FakeDeviceSamplingBackend* seen = nullptr;
  auto device = DeviceEngine(Options(), &seen);
  ASSERT_TRUE(device);
  ExpectSame(RunAll(*device, requests), expected);
  // Every row was drawn on the "device"; the constrained ones were masked there.
  EXPECT_GT(seen->masked_rows.load(), 0);
  EXPECT_GT(seen->device_rows.load(), seen->masked_rows.load());
  EXPECT_GT(MetricValue(device->MetricsText(), "jisu:device_mask_fill_seconds_total"), 0);

  // With drafts: verification rows are drawn on the device too, each masked after the drafts
  // before it. Scripts of the constrained output (some drafts corrupted) and of the model's
  // unconstrained favourites (which the grammar refuses).
  std::vector<EngineRequest> free = requests;
  for (EngineRequest& r : free) r.sampling.structured = {};
  const auto unconstrained = RunAll(**host, free);
  for (double p_wrong : {0.0, 0.3}) {
    for (bool wrong_script : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "p_wrong " << p_wrong << " unconstrained script " << wrong_script);
      auto drafter = std::make_shared<ScriptedDrafter>(
          7, p_wrong, static_cast<int32_t>(model_->config().vocab_size));
      for (size_t i = 0; i < requests.size(); ++i) {
        drafter->Expect(requests[i].prompt,
                        wrong_script ? unconstrained[i]->tokens : expected[i]->tokens);
      }
      EngineOptions o = Options();
      o.drafter = drafter;
      o.max_draft_tokens = 5;
      auto engine = DeviceEngine(o, &seen);
      ASSERT_TRUE(engine);
      ExpectSame(RunAll(*engine, requests), expected);
      const SchedulerStats s = engine->scheduler_stats();
      if (!wrong_script) {
        EXPECT_GT(s.num_accepted_draft_tokens, 0);
      }
      EXPECT_GT(s.num_draft_tokens, 0);
      EXPECT_GT(seen->masked_verification_rows.load(), 0);
      std::printf(
          "p_wrong %.1f unconstrained script %d: drafted %lld accepted %lld, %lld masked "
          "verification rows of %lld device rows\n",
          p_wrong, wrong_script, static_cast<long long>(s.num_draft_tokens),
          static_cast<long long>(s.num_accepted_draft_tokens),
          static_cast<long long>(seen->masked_verification_rows.load()),
          static_cast<long long>(seen->device_rows.load()));
    }
  }
}

TEST_F(EngineDeviceMaskTest, SampledDeviceRowsStayInTheGrammar) {
  std::vector<EngineRequest> requests = testing::Requests(model_->tokenizer());
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].sampling.temperature = 1.3f;
    requests[i].sampling.seed = 11 + i;
  }
  FakeDeviceSamplingBackend* seen = nullptr;
  auto device = DeviceEngine(Options(), &seen);
  ASSERT_TRUE(device);
  const auto got = RunAll(*device, requests);
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    ExpectValid(*got[i], i == 3);
  }
  EXPECT_GT(seen->masked_rows.load(), 0);
}

// A verification's masks: row i is the mask after drafts[0..i), the matcher ends where it
// started, and rows after a draft the grammar refuses are all zero.
TEST_F(EngineDeviceMaskTest, VerificationMasksFollowTheDrafts) {
  const Tokenizer& tok = model_->tokenizer();
  const int32_t vocab = static_cast<int32_t>(model_->config().vocab_size);
  grammar::GrammarCompiler compiler(
      grammar::TokenVocab::FromTokenizer(tok, vocab, model_->eos_ids()));
  SamplingParams p;
  p.temperature = 0;
  p.structured.kind = StructuredOutput::Kind::kJsonSchema;
  p.structured.text = testing::kSchema;
  auto g = compiler.Compile(p.structured);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const size_t words = (*g)->vocab().mask_words();
  OutputProcessor out(p, -1, tok, model_->eos_ids(), vocab, *g);
  OutputProcessor twin(p, -1, tok, model_->eos_ids(), vocab, *g);
  // A valid output: the host engine's greedy one.
  auto engine = Engine::Create(*model_, Options());
  ASSERT_TRUE(engine.ok());
  EngineRequest r = testing::Requests(tok)[0];
  const auto run = RunAll(**engine, {r});
  const std::vector<int32_t>& text = run[0]->tokens;
  ASSERT_GE(text.size(), 6u);
  // Both take the first token; then drafts are the next four.
  for (OutputProcessor* o : {&out, &twin}) o->OnToken(nullptr, text[0], {}, {});
  const std::vector<int32_t> drafts(text.begin() + 1, text.begin() + 5);
  std::vector<uint32_t> masks((drafts.size() + 1) * words), want(words), before(words);
  out.FillGrammarMask(before.data());
  out.FillGrammarMasks(drafts, masks.data(), words);
  for (size_t i = 0; i <= drafts.size(); ++i) {
    twin.FillGrammarMask(want.data());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), masks.begin() + i * words)) << "row " << i;
    if (i < drafts.size()) twin.OnToken(nullptr, drafts[i], {}, {});
  }
  std::vector<uint32_t> after(words);
  out.FillGrammarMask(after.data());
  EXPECT_EQ(after, before);

  // A refused draft at position 1 (a token row 1's mask disallows): rows 0-1 are real masks,
  // rows 2.. are zero.
  int32_t refused = 0;
  while (masks[words + static_cast<size_t>(refused >> 5)] >> (refused & 31) & 1u) ++refused;
  const std::vector<int32_t> bad = {drafts[0], refused, drafts[1]};
  std::vector<uint32_t> cut((bad.size() + 1) * words, 0xffffffffu);
  out.FillGrammarMasks(bad, cut.data(), words);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), cut.begin()));
  EXPECT_TRUE(std::equal(cut.begin() + words, cut.begin() + 2 * words, masks.begin() + words));
  EXPECT_EQ(std::count(cut.begin() + 2 * words, cut.end(), 0u), static_cast<long>(2 * words));
  out.FillGrammarMask(after.data());
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace jisu
