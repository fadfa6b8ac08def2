// The built-in mixed workload: chat turns, document summarization (long input, short output)
// and code generation (short input, long output), built from text shipped in bench/workload/.
// A share of requests starts with one common system prompt (what a prefix cache can share
// across users), users are drawn from a Zipf distribution (a few heavy users), and a user's
// successive chat requests continue one conversation (what a per-tenant cache can keep).
// Everything is a pure function of the corpus, the options and the seed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "jisu/status.h"

namespace jisu::loadgen {

enum class RequestClass { kChat = 0, kSummarize = 1, kCode = 2 };
inline constexpr int kNumClasses = 3;
const char* RequestClassName(RequestClass c);

struct Corpus {
  std::vector<std::string> passages;   // English prose, one passage each
  std::vector<std::string> code;       // code snippets
  std::vector<std::string> questions;  // chat questions, one line each
  std::string system_prompt;           // the common system prompt
};

// Reads prose.txt (passages separated by blank lines), code.txt (snippets separated by lines
// "-----"), questions.txt (one per line) and system_prompt.txt from `dir`.
Result<Corpus> LoadCorpus(const std::string& dir);

struct Message {
  std::string role;  // system | user | assistant
  std::string content;
};

struct RequestSpec {
  RequestClass cls = RequestClass::kChat;
  bool shared_prefix = false;  // starts with the common system prompt
  std::string user;            // OpenAI `user` field
  std::vector<Message> messages;
  std::vector<int32_t> prompt_tokens;  // non-empty: a token-id prompt (/completions only)
  int32_t max_tokens = 0;
};

struct WorkloadOptions {
  size_t num_requests = 200;
  uint64_t seed = 0;
  std::array<double, kNumClasses> mix = {0.5, 0.25, 0.25};  // chat, summarize, code
  std::array<int32_t, kNumClasses> max_tokens = {128, 32, 256};
  int32_t summarize_words = 350;  // document length given to summarize
  int32_t max_chat_history = 2;   // earlier turns kept in a conversation before it restarts
  double shared_prefix_share = 0.4;
  int64_t num_users = 64;
  double zipf_s = 1.1;

  Status Validate() const;
};

Result<std::vector<RequestSpec>> GenerateWorkload(const Corpus& corpus,
                                                  const WorkloadOptions& options);

// The fixed workload: `num_requests` prompts of exactly `prompt_tokens` token ids each, drawn
// uniformly from [3, token_id_limit) per request (no two share a prefix), each asking for
// `max_tokens`. With ignore_eos it is the same work as `jisu bench-engine -p P -n N
// --shared-prefix 0`, so the two can be compared to tell the HTTP layer's cost.
struct FixedWorkloadOptions {
  size_t num_requests = 64;
  int32_t prompt_tokens = 128;
  int32_t max_tokens = 64;
  int32_t token_id_limit = 1000;  // below every vocabulary this is used with
  uint64_t seed = 0;

  Status Validate() const;
};
std::vector<RequestSpec> GenerateFixedWorkload(const FixedWorkloadOptions& options);

// The messages flattened into one completion prompt ("System: ...\nUser: ...\nAssistant:").
std::string FlattenPrompt(const std::vector<Message>& messages);

}  // namespace jisu::loadgen
